//go:build darwin

package dirs

const isDarwin = true
