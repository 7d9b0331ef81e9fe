//go:build !race

package download_test

const raceEnabled = false
