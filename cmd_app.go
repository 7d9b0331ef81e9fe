package main

import (
	"context"
	"errors"

	"github.com/strata-llm/strata/app/desktop"
	"github.com/strata-llm/strata/engine"
)

// cmdApp runs the menu-bar app with the API serving beside it. Without a
// display (Linux without DISPLAY) it says so in one log line and runs
// headless, like serve. It must run on the main goroutine.
func cmdApp(ctx context.Context, env *cmdEnv, args []string) error {
	p, err := openProgram(env, programOptions{})
	if err != nil {
		return err
	}
	defer p.close()
	l, err := p.listen()
	if err != nil {
		return err
	}
	demo, err := engine.EnsureDemoModel(ctx, env.Dirs.Cache)
	if err != nil {
		p.log.Error("the demo model could not be generated", "err", err)
		demo = ""
	}

	apiCtx, stopAPI := context.WithCancel(ctx)
	defer stopAPI()
	served := make(chan error, 1)
	go func() { served <- p.serveAPI(apiCtx, l, false) }()

	err = desktop.Run(ctx, desktop.Parts{
		Engine:          p.engine,
		Runner:          p.runner,
		Settings:        p.settings,
		SettingsNotice:  p.notice,
		Models:          p.models,
		APIInfo:         func() (string, string) { return p.addr, p.token.String() },
		RegenerateToken: func() error { _, err := p.token.Regenerate(); return err },
		ForgetHistory:   func(all bool) error { return p.engine.ForgetHistory(historyDir(env.Dirs.Data), all) },
		Log:             p.log,
		Dirs:            env.Dirs,
		DefaultModel:    demo,
		AutoStart:       true,
	})
	if errors.Is(err, desktop.ErrNoDisplay) {
		p.log.Info("no display: running headless like `strata serve`", "reason", err)
		go p.loadDefault(apiCtx)
		select {
		case <-ctx.Done():
		case err := <-served:
			return err
		}
		err = nil
	}
	stopAPI()
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}
