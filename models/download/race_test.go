//go:build race

package download_test

// The race detector slows the byte loops about tenfold; the fault tests
// then serve a 16 MB file instead of 64 MB to stay within a minute.
const raceEnabled = true
