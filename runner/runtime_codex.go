package runner

import (
	"io"
	"strconv"
	"strings"

	"lane/runtimes/codex"
	"lane/trace"
)

// codexRuntime is OpenAI's Codex CLI: `codex exec --json … -- TASK`.
func codexRuntime() *Runtime {
	return &Runtime{
		Name: "codex", Title: "Codex", Package: "@openai/codex",
		EndpointAPI: "openai-responses", KeyEnv: "OPENAI_API_KEY", EnforcesTurns: true,
		process: &process{
			binary: binarySpec{versionOK: func(out string) bool { return strings.HasPrefix(out, "codex-cli ") }, want: `"codex-cli VERSION"`},
			setup:  codexSetup,
			newSource: func(r io.Reader) EventSource {
				d := codex.NewDecoder(r)
				d.MaxOutputSize = MaxEventOutput
				return d
			},
			newJudge: func(o Options) judge {
				return &cliJudge{o: o, tally: &codex.Tally{Model: o.pricedModel(), PriorUsage: o.PriorSessionUsage}}
			},
			final: func(ev trace.Event) bool {
				return (ev.Kind == trace.KindUsage || ev.Kind == trace.KindError) && (ev.Subtype == "turn.completed" || ev.Subtype == "turn.failed")
			},
			stopOn:     authRefusal,
			authHint:   "the model API refused the key: check OPENAI_API_KEY (or `codex login`)",
			capability: unattended,
		},
	}
}

// codexSetup: `codex exec --json …`; an endpoint is a provider given with
// -c overrides (Codex speaks only the Responses API to it).
func codexSetup(o Options, conf string) (setup, error) {
	var env []string
	args := []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}
	if o.ResumeSession == "" {
		args = append(args, "-C", o.Dir)
		for _, d := range o.AddDirs {
			args = append(args, "--add-dir", d)
		}
	}
	if o.Model != "" {
		args = append(args, "-m", o.Model)
	}
	if o.BaseURL != "" {
		args = append(args,
			"-c", `model_provider="lane"`,
			"-c", `model_providers.lane={name="lane",base_url=`+tomlString(o.BaseURL)+
				`,env_key=`+tomlString(codexKeyEnv)+`,wire_api="responses"}`)
		env = append(env, codexKeyEnv+"="+o.keyFrom(o.Env))
	}
	if o.AppendSystemPrompt != "" {
		args = append(args, "-c", "developer_instructions="+tomlString(o.AppendSystemPrompt))
	}
	if o.ResumeSession != "" {
		args = append(args, "resume", o.ResumeSession)
	}
	return setup{args: append(args, "--", o.Prompt), env: env}, nil
}

// codexKeyEnv is the variable lane gives Codex the endpoint's key in.
const codexKeyEnv = "LANE_CODEX_API_KEY"

// tomlString quotes s as a TOML basic string (JSON's escapes are valid TOML).
func tomlString(s string) string { return strconv.Quote(s) }
