// Command strata runs Mixture-of-Experts language models on this computer:
// with no arguments it is the menu-bar app; `strata serve` runs the engine
// and the local API without a UI; `strata run` generates once from the
// command line; `strata help` lists everything else.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"boot.strata.dev/uilocale"
)

func main() {
	uilocale.Restore() // the environment as given, now that Fyne's init is done
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
