// Package runner runs one task on one agent runtime and judges the run.
//
// What every runtime shares:
//   - the contract of a runtime (runtime.go: Runtime, Process, ShellLog;
//     process.go: Setup, Judge; interactive.go: Dialog and its optional
//     parts Sourcer, Amender, Worker, Asider, Talk; reindex.go: Replayer,
//     Segment), exported so that a runtime can be written outside runner
//     (see internal/echoruntime), and Entries, a table of them (Runtimes is
//     lane's own; the commands read whichever they are handed);
//   - the one run path (run.go, attempt.go): find the binary (find.go),
//     start an attempt, read its events, judge it, record it through the
//     caller's Recorder, retry or fall back;
//   - the supervision of a runtime's process (process.go, supervise.go,
//     subreaper.go, shim.go): its whole process tree, stopped with it, and
//     the watchdogs (watchdog.go) and lane-enforced turn limits;
//   - the two-way dialogs' common frame (interactive.go, steer_only.go),
//     hermetic homes (hermetic.go), running elsewhere (container.go), the
//     snapshot of the run's folder (changes.go), re-decoding a stored run
//     (reindex.go).
//
// What is one runtime's own and still lives here, each in a file named
// after it: runtime_NAME.go (its entry: command line, environment, hermetic
// home), claude_dialog.go and codex_dialog.go (their two-way protocols),
// acp.go and reindex_acp.go (the ACP runtimes), local.go (lane's own loop,
// glue to package agent). Their decoders, tool-call descriptions and
// session-file readers are in runtimes/ and streamjson. sessionlog.go reads
// any runtime's session logs for shell exit codes, as its entry's ShellLog
// says where they are and how they read.
//
// runner knows no SQL and no HTTP: the caller records (Recorder) and asks
// people (interact.Desk).
package runner
