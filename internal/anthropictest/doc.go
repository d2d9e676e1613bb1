// Package anthropictest runs lane's end-to-end tests against the real Claude Code CLI: a scripted
// Anthropic Messages API server (NewServer), the binary to run (ClaudeBin) and its environment (ClaudeEnv).
//
//	srv := anthropictest.NewServer(t, anthropictest.Tools(anthropictest.Bash("toolu_1", "echo hi > hello.txt")),
//		anthropictest.Text("Done"))
//	cmd := exec.CommandContext(ctx, anthropictest.ClaudeBin(t), "-p", "write hello", "--output-format", "stream-json",
//		"--verbose", "--model", "sonnet", "--permission-mode", "bypassPermissions", "--strict-mcp-config")
//	cmd.Env = anthropictest.ClaudeEnv(srv.URL(), t.TempDir())
//
// # What Claude Code 2.1.328 asks, and how it is routed
//
// Observed with `claude -p … --output-format stream-json` and the environment of ClaudeEnv:
//
//   - Every model call is POST /v1/messages?beta=true with "stream": true, model "claude-sonnet-5-5" for
//     --model sonnet, 10 to 12 tools, header X-Claude-Code-Session-Id, and a system prompt whose first block is
//     "x-anthropic-billing-header: cc_version=…; cc_entrypoint=sdk-cli;". A run makes one call per model
//     turn and nothing else: no title generation, quota probe, token counting or haiku call was seen in -p
//     mode, nor on --resume or --continue (which resend the earlier turns in messages).
//   - A subagent (Agent tool) calls with the same model and system prompt opening, fewer tools, a header
//     X-Claude-Code-Agent-Id and "cc_is_subagent=true" in the billing line. Such requests are Kind Subagent
//     and take the turns of SetSubagentTurns, so they never consume the main script.
//   - Without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC it also sends HEAD /api/hello (answered 200).
//   - A background subagent (Agent without run_in_background: false) that finishes after the main turn makes
//     claude take one more main turn and print a second system/init and a second result line.
//
// Routing: POST /v1/messages with no tools is Side (the binary names side calls such as
// generate_session_title, compact or extract_memories; they are answered "done"); with a subagent marker it
// is Subagent; any other is Main. Other paths are Other: count_tokens answers {"input_tokens":100},
// /api/hello 200, the rest 404.
package anthropictest
