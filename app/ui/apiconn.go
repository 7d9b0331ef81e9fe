package ui

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/strata-llm/strata/api/client"
)

// apiConn is the UI's own connection to the local API (the websocket at
// /v1/ws), so the chat window's generations wait in the same queue as
// every other app's. It is dialled on first use and again after it
// dropped. The zero value with info set is ready to use.
type apiConn struct {
	info func() (addr, token string) // nil: no API

	mu     sync.Mutex
	c      *client.Client
	closed bool
}

var errNoAPI = errors.New("the local API is not running, so the chat cannot reach the engine")

// get returns the open connection, dialling if there is none.
func (a *apiConn) get(ctx context.Context) (*client.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errors.New("the app is closing")
	}
	if a.c != nil {
		select {
		case <-a.c.Done():
			a.c = nil
		default:
			return a.c, nil
		}
	}
	if a.info == nil {
		return nil, errNoAPI
	}
	addr, token := a.info()
	if addr == "" {
		return nil, errNoAPI
	}
	c, err := client.Dial(ctx, "ws://"+addr+"/v1/ws", client.Options{Token: token, Name: "Strata app"})
	if err != nil {
		return nil, fmt.Errorf("connecting to the local API at %s: %w", addr, err)
	}
	a.c = c
	return c, nil
}

// close closes the connection; get fails afterwards.
func (a *apiConn) close() {
	a.mu.Lock()
	c := a.c
	a.c, a.closed = nil, true
	a.mu.Unlock()
	if c != nil {
		c.Close()
	}
}
