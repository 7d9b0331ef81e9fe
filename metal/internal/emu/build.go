package emu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

//go:embed shim
var shimFS embed.FS

// Source is one MSL file: its name (for diagnostics) and its bytes, the
// same bytes a Mac compiles with newLibraryWithSource.
type Source struct {
	Name string
	Text []byte
}

// BuildOptions configure Compile. The zero value compiles optimised
// without sanitizers with clang++-16 (or $CXX).
type BuildOptions struct {
	// Sanitize builds with AddressSanitizer and UndefinedBehaviorSanitizer:
	// an out-of-bounds access or undefined behaviour fails the dispatch
	// with the .metal line.
	Sanitize bool
	// CXX is the C++ compiler (default $CXX, else clang++-16).
	CXX string
	// CacheDir holds compiled programs by content hash (default
	// os.UserCacheDir()/strata/mslemu).
	CacheDir string
}

// Program is the emulator binary holding the kernels of a set of sources.
type Program struct {
	Bin        string
	kernels    map[string]bool
	symbolizer string
}

// Has reports whether the program has a kernel of that name.
func (p *Program) Has(kernel string) bool { return p.kernels[kernel] }

// Compiler returns the C++ compiler Compile would use and whether it can
// build the shim (clang 15 or newer: _Float16 on x86), or why not.
func Compiler(cxx string) (string, error) {
	if cxx == "" {
		cxx = os.Getenv("CXX")
	}
	if cxx == "" {
		cxx = "clang++-16"
	}
	path, err := exec.LookPath(cxx)
	if err != nil {
		return "", fmt.Errorf("the Metal emulator needs clang 16 (%s not found; on Debian: apt-get install clang-16)", cxx)
	}
	return path, nil
}

// Compile lints the sources, then compiles them unchanged as C++ against
// the metal_stdlib shim into one program, or returns the cached one built
// from the same bytes, flags and compiler.
func Compile(ctx context.Context, srcs []Source, o BuildOptions) (*Program, error) {
	var lintErrs []error
	kernels := map[string]bool{}
	for _, s := range srcs {
		if err := Lint(s.Name, string(s.Text)); err != nil {
			lintErrs = append(lintErrs, err)
		}
		for _, k := range Kernels(string(s.Text)) {
			if kernels[k] {
				return nil, fmt.Errorf("kernel %s defined twice", k)
			}
			kernels[k] = true
		}
	}
	if err := errors.Join(lintErrs...); err != nil {
		return nil, fmt.Errorf("lint: %w", err)
	}
	cxx, err := Compiler(o.CXX)
	if err != nil {
		return nil, err
	}
	ver, err := exec.CommandContext(ctx, cxx, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", cxx, err)
	}
	flags := []string{"-std=c++20", "-O2", "-g", "-fsigned-char", "-Wno-unknown-attributes"}
	if o.Sanitize {
		flags = []string{"-std=c++20", "-O1", "-g", "-fsigned-char", "-Wno-unknown-attributes",
			"-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"}
	}
	h := sha256.New()
	fmt.Fprintf(h, "mslemu v1\n%s\n%s\n%q\n", cxx, ver, flags)
	shimFiles := map[string][]byte{}
	err = fs.WalkDir(shimFS, "shim", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := shimFS.ReadFile(p)
		shimFiles[strings.TrimPrefix(p, "shim/")] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(shimFiles))
	for n := range shimFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "shim %s %d\n", n, len(shimFiles[n]))
		h.Write(shimFiles[n])
	}
	for _, s := range srcs {
		fmt.Fprintf(h, "src %s %d\n", s.Name, len(s.Text))
		h.Write(s.Text)
	}
	key := hex.EncodeToString(h.Sum(nil))[:32]
	cache := o.CacheDir
	if cache == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no cache directory for the emulator: %w", err)
		}
		cache = filepath.Join(uc, "strata", "mslemu")
	}
	final := filepath.Join(cache, key)
	bin := filepath.Join(final, "mslemu-run")
	if _, err := os.Stat(bin); err == nil {
		return &Program{Bin: bin, kernels: kernels, symbolizer: symbolizer(cxx)}, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cache, "build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	shimDir := filepath.Join(dir, "shim")
	for n, b := range shimFiles {
		p := filepath.Join(shimDir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
	}
	type unit struct{ src, obj string }
	var units []unit
	for i, s := range srcs {
		base := fmt.Sprintf("%02d_%s", i, filepath.Base(s.Name))
		if err := os.WriteFile(filepath.Join(dir, base), s.Text, 0o644); err != nil {
			return nil, err
		}
		g, err := glue(s.Name, base, string(s.Text))
		if err != nil {
			return nil, err
		}
		gp := filepath.Join(dir, base+".glue.cpp")
		if err := os.WriteFile(gp, []byte(g), 0o644); err != nil {
			return nil, err
		}
		units = append(units, unit{gp, gp + ".o"})
	}
	for _, f := range []string{"mslemu_rt.cpp", "mslemu_main.cpp"} {
		units = append(units, unit{filepath.Join(shimDir, f), filepath.Join(dir, f+".o")})
	}
	// Two compilers at a time: the machines this runs on are small.
	sem := make(chan struct{}, 2)
	errs := make([]error, len(units))
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := append(append([]string{}, flags...), "-I", shimDir)
			if strings.HasSuffix(u.src, ".glue.cpp") {
				args = append(args, "-include", "shim.h")
			}
			args = append(args, "-c", u.src, "-o", u.obj)
			cmd := exec.CommandContext(ctx, cxx, args...)
			cmd.Dir = dir
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("compile %s: %w\n%s", filepath.Base(u.src), err, out.String())
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	args := append([]string{}, flags...)
	for _, u := range units {
		args = append(args, u.obj)
	}
	args = append(args, "-o", filepath.Join(dir, "mslemu-run"), "-lpthread")
	if out, err := exec.CommandContext(ctx, cxx, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("link: %w\n%s", err, out)
	}
	// Keep the glue and sources beside the binary: sanitizer reports name them.
	for _, u := range units {
		os.Remove(u.obj)
	}
	if err := os.Rename(dir, final); err != nil {
		if _, serr := os.Stat(bin); serr == nil { // another process won the race
			return &Program{Bin: bin, kernels: kernels, symbolizer: symbolizer(cxx)}, nil
		}
		return nil, err
	}
	return &Program{Bin: bin, kernels: kernels, symbolizer: symbolizer(cxx)}, nil
}

// symbolizer is the llvm-symbolizer that goes with cxx (sanitizer reports
// name the .metal line through it).
func symbolizer(cxx string) string {
	if real, err := filepath.EvalSymlinks(cxx); err == nil {
		if p := filepath.Join(filepath.Dir(real), "llvm-symbolizer"); fileExists(p) {
			return p
		}
	}
	return "llvm-symbolizer"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
