// Package uilocale keeps the UI toolkit quiet about C locales.
//
// Fyne's lang package reads the user's locale in its package init and logs
// three "Fyne error: Error parsing user locale C" lines to stderr when the
// locale is the C locale with a codeset (LANG=C.UTF-8, the default of most
// containers, CI runners and ssh sessions): it cannot make a language tag of
// "C". Every strata command links Fyne (the menu-bar app is the same
// binary), so every command printed them.
//
// This package's init runs before Fyne's (its module path sorts before
// fyne.io, and Go initialises packages in import-path order) and, for the
// duration of package initialisation only, shows Fyne the plain C locale,
// which it reads as "no preference": English, quietly. main calls Restore
// first thing, so the rest of the program and its child processes see the
// environment exactly as it was given.
package uilocale

import (
	"os"
	"strings"
)

// saved is the environment as it was before init changed it.
var saved []savedVar

type savedVar struct {
	key, value string
	set        bool
}

func init() { saved = quiet(os.LookupEnv, setenv) }

func setenv(key, value string, set bool) {
	if set {
		os.Setenv(key, value)
	} else {
		os.Unsetenv(key)
	}
}

// Restore puts back the variables init changed. It is safe to call more
// than once.
func Restore() {
	for _, v := range saved {
		setenv(v.key, v.value, v.set)
	}
	saved = nil
}

// Changed reports the variables init changed and Restore has not yet put
// back.
func Changed() []string {
	var keys []string
	for _, v := range saved {
		keys = append(keys, v.key)
	}
	return keys
}

// isC reports whether a POSIX locale name is the C locale ("C", "POSIX",
// with or without a codeset or modifier: "C.UTF-8", "C.utf8", "POSIX@x").
func isC(loc string) bool {
	lang, _, _ := strings.Cut(loc, ".")
	lang, _, _ = strings.Cut(lang, "@")
	return lang == "C" || lang == "POSIX"
}

// quiet rewrites the variables that the locale library under Fyne reads
// (the first set of LC_ALL, LC_MESSAGES and LANG; then LANGUAGE, a
// colon-separated list, unless that first one is the C locale) so that no
// C-with-codeset name reaches it, and returns what it changed.
func quiet(lookup func(string) (string, bool), set func(key, value string, set bool)) []savedVar {
	var out []savedVar
	change := func(key, value string, keep bool) {
		old, had := lookup(key)
		out = append(out, savedVar{key: key, value: old, set: had})
		set(key, value, keep)
	}
	for _, key := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v, _ := lookup(key)
		if v == "" {
			continue
		}
		if isC(v) {
			if v != "C" && v != "POSIX" {
				change(key, "C", true) // the library reads exactly "C" as no preference
			}
			return out
		}
		break
	}
	if list, _ := lookup("LANGUAGE"); list != "" {
		all := strings.Split(list, ":")
		var keep []string
		for _, l := range all {
			if l != "" && !isC(l) {
				keep = append(keep, l)
			}
		}
		if len(keep) != len(all) {
			change("LANGUAGE", strings.Join(keep, ":"), len(keep) > 0)
		}
	}
	return out
}
