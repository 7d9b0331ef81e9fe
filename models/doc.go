// Package models manages the GGUF models Strata can run: an embedded
// catalog, downloads from Hugging Face or any https URL, and the installed
// store in the data folder.
//
// # Store layout
//
// A [Manager] owns one folder (normally dirs.Data/models) with one
// sub-folder per model, named by the model's name:
//
//	<dir>/<name>/manifest.json   the model is installed (written last, atomically)
//	<dir>/<name>/pull.json       a download was started and is not finished
//	<dir>/<name>/<file>.gguf     the model's files (split GGUFs: one per shard)
//	<dir>/<name>/<file>.gguf.partial(.json)  an unfinished file and its progress
//
// A model counts as installed only when its manifest exists. The manifest
// is written (temp file, fsync, rename, fsync of the folder) after every
// file was renamed to its final name and passed the strict GGUF validator,
// and it is the first thing [Manager.Delete] removes; so a crash at any
// point never leaves a manifest naming a file that is not there.
//
// # Names
//
// Every name that comes from outside (a model name, a file name from a
// catalog, a Hugging Face path or a URL) is checked by [ValidateName] before
// it touches the file system: no path separators, no "." or "..", nothing
// absolute, no control characters, at most [MaxNameLen] bytes.
//
// # Pulls
//
// [Manager.Pull] accepts a catalog name, a Hugging Face "owner/repo/file.gguf"
// (optionally "owner/repo@revision/path/file.gguf", or "hf://…"), or an https
// URL; a split GGUF ("…-00001-of-00003.gguf") brings all its shards. It
// returns at once and downloads in the background; [Manager.Subscribe]
// delivers [Event]s (phase, bytes done/total, rate, ETA) to any number of
// listeners (the websocket API, the models window, the CLI's progress bar).
// [Manager.Pause], [Manager.Resume] and [Manager.Cancel] control a pull;
// paused and interrupted pulls survive a restart and are listed as paused.
//
// The expected sha256 of a file is the catalog's, else the one the hub
// publishes (X-Linked-Etag on a HEAD of the resolve URL). A file with
// neither is kept but its model is marked unverified, never verified.
// [Manager.Verify] re-hashes and re-validates an installed model on demand.
package models
