// Package importer reads the session files agent runtimes write on their own
// (Claude Code's transcripts, Codex's rollouts, …) into lane's history.
package importer
