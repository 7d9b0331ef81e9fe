// Command bundle turns FyneApp.toml, the one source of Strata's name,
// identifier, version and build number, into the files that package the
// app: the macOS Info.plist and the Linux desktop entry. It also checks
// FyneApp.toml strictly and the icons' sizes, and turns Start at login on
// or off for an installed program (the same entry the menu writes).
// packaging/macos/build.sh and `make install` run it.
//
//	go run ./packaging/bundle check   [-root DIR]
//	go run ./packaging/bundle version [-root DIR]             # prints "VERSION BUILD"
//	go run ./packaging/bundle plist   [-root DIR] -exe FILE -out Info.plist
//	go run ./packaging/bundle desktop [-root DIR] -exec FILE -out FILE.desktop
//	go run ./packaging/bundle autostart -exe FILE on|off
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/strata-llm/strata/app/autostart"
	"github.com/strata-llm/strata/internal/atomicfile"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage: bundle check|version|plist|desktop|autostart [flags]; see the package comment")

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	root := fs.String("root", ".", "the repository `folder` holding FyneApp.toml")
	exe := fs.String("exe", "", "the app's executable")
	exec := fs.String("exec", "", "the installed program's absolute path (desktop entry)")
	out := fs.String("out", "", "the file to write")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if cmd == "autostart" {
		return setAutostart(*exe, fs.Args())
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", cmd, fs.Args())
	}
	meta, err := LoadMetadata(filepath.Join(*root, "FyneApp.toml"))
	if err != nil {
		return err
	}
	switch cmd {
	case "check":
		if err := CheckIcons(*root, meta); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "FyneApp.toml and icons ok: %s %s (%d), %s\n", meta.Details.Name, meta.Details.Version, meta.Details.Build, meta.Details.ID)
		return nil
	case "version":
		fmt.Fprintf(stdout, "%s %d\n", meta.Details.Version, meta.Details.Build)
		return nil
	case "plist":
		if *exe == "" || *out == "" {
			return errors.New("plist: -exe and -out are required")
		}
		b, err := InfoPlist(meta, *exe)
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(*out, b, 0o644)
	case "desktop":
		if *exec == "" || *out == "" {
			return errors.New("desktop: -exec and -out are required")
		}
		b, err := DesktopEntry(meta, *exec)
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(*out, b, 0o644)
	}
	return errUsage
}

// setAutostart turns Start at login on or off for exe, writing exactly
// what the menu's "Start at login" writes.
func setAutostart(exe string, args []string) error {
	if len(args) != 1 || (args[0] != "on" && args[0] != "off") {
		return errors.New("autostart: want -exe FILE on|off")
	}
	a, err := autostart.New(exe)
	if err != nil {
		return err
	}
	return a.Set(args[0] == "on")
}
