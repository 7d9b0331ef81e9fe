//go:build !unix

package gguf

func adviseWillNeed([]byte) {}
