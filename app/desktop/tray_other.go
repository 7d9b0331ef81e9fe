//go:build !(linux || freebsd || openbsd || netbsd)

package desktop

func haveDisplay() bool { return true }

func trayProblem() string { return "" }

func trayHostMissing() string { return "" }
