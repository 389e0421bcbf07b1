// Runs Cilium's own CNI config writer (github.com/cilium/cilium/daemon/cmd/cni, the hive cell
// cilium-agent starts) outside the agent, which cannot run here: the real cluster's tests replay
// Cilium taking a node over with Cilium's code, not a copy of its behaviour.
//
// Flags are the cell's own, as the agent takes them (--write-cni-conf-when-ready,
// --read-cni-conf, --cni-exclusive, --cni-chaining-mode, --cni-log-file, ...), plus --watch.
// Note the cell's --cni-exclusive defaults to false; Helm's cni.exclusive sets it true.
//
// It exits once the first write is done (status Ok: 0, else 1), or with --watch keeps the
// manager (and, with --cni-exclusive, its fsnotify watch of the dir) running until SIGTERM or SIGINT.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"

	"github.com/cilium/cilium/api/v1/models"
	"github.com/cilium/cilium/daemon/cmd/cni"
	"github.com/cilium/cilium/pkg/hive"
	"github.com/cilium/cilium/pkg/logging"
	"github.com/cilium/cilium/pkg/option"
)

func main() {
	// The cell logs each write and rename at info: the tests count them on stderr.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	logging.DefaultSlogLogger = logger

	var manager cni.CNIConfigManager
	h := hive.New(
		cni.Cell,
		// The cell reads only DaemonConfig.Debug (the conflist's enable-debug).
		cell.Provide(func() *option.DaemonConfig { return &option.DaemonConfig{} }),
		cell.Invoke(func(m cni.CNIConfigManager) { manager = m }),
	)
	flags := pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)
	watch := flags.Bool("watch", false, "keep the manager running until SIGTERM or SIGINT")
	h.RegisterFlags(flags)
	_ = flags.Parse(os.Args[1:]) // ExitOnError: a bad flag exits 2

	ctx := context.Background()
	if err := h.Start(logger, ctx); err != nil {
		logger.Error("hive start failed", "error", err)
		os.Exit(1)
	}
	// The cell's controller writes asynchronously: wait for its first result.
	status := manager.Status()
	for deadline := time.Now().Add(30 * time.Second); status.State == models.StatusStateFailure && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		status = manager.Status()
	}
	logger.Info("first write", "state", status.State, "msg", status.Msg)
	if *watch && status.State == models.StatusStateOk {
		stop, cancel := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		<-stop.Done()
		cancel()
	}
	if err := h.Stop(logger, ctx); err != nil {
		logger.Error("hive stop failed", "error", err)
		os.Exit(1)
	}
	if status.State != models.StatusStateOk {
		os.Exit(1)
	}
}
