// Package config reads lane's optional configuration file and resolves a
// --model such as "ollama:qwen2.5-coder:7b" to the runtime and endpoint that
// serve it.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// File is $XDG_CONFIG_HOME/lane/config.yaml.
type File struct {
	// Fallback is the model a failed Claude run is retried on.
	Fallback string `yaml:"fallback"`
	// Endpoints name model servers: `--model NAME:MODEL` uses one.
	Endpoints map[string]Endpoint `yaml:"endpoints"`
	// Prices override the price table, in USD per million tokens, keyed by
	// "provider:model" or a bare model id.
	Prices map[string]Price `yaml:"prices"`
}

// Endpoint is a model server.
type Endpoint struct {
	API           string `yaml:"api"` // "openai" (chat completions) or "anthropic" (Messages)
	BaseURL       string `yaml:"base_url"`
	KeyEnv        string `yaml:"key_env"` // the environment variable holding its key
	ContextWindow int    `yaml:"context_window"`
}

// Price is per million tokens.
type Price struct {
	Input      float64 `yaml:"input"`
	Output     float64 `yaml:"output"`
	CacheRead  float64 `yaml:"cache_read"`
	CacheWrite float64 `yaml:"cache_write"`
}

// Path is where the config file lives for this environment.
func Path(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "lane", "config.yaml")
}

// Load reads the file at path; a missing file is an empty configuration.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &File{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	// An empty file decodes to io.EOF: no configuration.
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	for name, ep := range f.Endpoints {
		if ep.API != "openai" && ep.API != "anthropic" {
			return nil, fmt.Errorf("config %s: endpoint %q: api must be openai or anthropic, not %q", path, name, ep.API)
		}
		if ep.BaseURL == "" {
			return nil, fmt.Errorf("config %s: endpoint %q has no base_url", path, name)
		}
	}
	return &f, nil
}

// Runtime names.
const (
	RuntimeClaude = "claude"
	RuntimeLocal  = "local"
)

// Target is what serves a --model.
type Target struct {
	Runtime  string // RuntimeClaude or RuntimeLocal
	Provider string // local: ollama, openai, anthropic, openai-compatible or an endpoint's name
	Model    string // the model id as its API names it
	API      string // local: "openai" or "anthropic"
	BaseURL  string
	APIKey   string
	KeyEnv   string
	// ContextWindow in tokens, 0 when unknown.
	ContextWindow int
}

// Label is how the model is recorded and shown: "sonnet", "ollama:qwen2.5-coder:7b".
func (t Target) Label() string {
	if t.Runtime == RuntimeClaude {
		return t.Model
	}
	return t.Provider + ":" + t.Model
}

// builtinProviders are the PROVIDER: prefixes lane knows without a config file.
var builtinProviders = map[string]bool{"ollama": true, "openai": true, "anthropic": true, "openai-compatible": true}

// Resolve decides the runtime and endpoint for model. runtime is the
// --runtime flag ("", "claude" or "local"), baseURL the --base-url flag.
func (f *File) Resolve(model, runtime, baseURL string, getenv func(string) string) (Target, error) {
	prefix, rest, hasPrefix := strings.Cut(model, ":")
	_, isEndpoint := f.Endpoints[prefix]
	local := hasPrefix && (builtinProviders[prefix] || isEndpoint)
	switch runtime {
	case "", RuntimeClaude, RuntimeLocal:
	default:
		return Target{}, fmt.Errorf("unknown --runtime %q (want claude or local)", runtime)
	}
	if runtime == RuntimeClaude || (runtime == "" && !local) {
		if local {
			return Target{}, fmt.Errorf("--runtime claude cannot run %s: Claude Code speaks to Claude models only", model)
		}
		return Target{Runtime: RuntimeClaude, Model: model}, nil
	}
	if !local {
		// --runtime local with a bare model: an OpenAI-compatible server.
		prefix, rest = "openai-compatible", model
	}
	if rest == "" {
		return Target{}, fmt.Errorf("--model %s names no model after the provider", model)
	}
	t := Target{Runtime: RuntimeLocal, Provider: prefix, Model: rest}
	switch {
	case isEndpoint:
		ep := f.Endpoints[prefix]
		t.API, t.BaseURL, t.KeyEnv, t.ContextWindow = ep.API, ep.BaseURL, ep.KeyEnv, ep.ContextWindow
	case prefix == "ollama":
		t.API, t.BaseURL = "openai", ollamaBase(getenv("OLLAMA_HOST"))
	case prefix == "openai":
		t.API, t.KeyEnv, t.BaseURL = "openai", "OPENAI_API_KEY", orDefault(getenv("OPENAI_BASE_URL"), "https://api.openai.com/v1")
	case prefix == "anthropic":
		t.API, t.KeyEnv, t.BaseURL = "anthropic", "ANTHROPIC_API_KEY", orDefault(getenv("ANTHROPIC_BASE_URL"), "https://api.anthropic.com")
	case prefix == "openai-compatible":
		t.API, t.KeyEnv, t.BaseURL = "openai", "OPENAI_API_KEY", getenv("OPENAI_BASE_URL")
	}
	if baseURL != "" {
		t.BaseURL = baseURL
	}
	if t.BaseURL == "" {
		return Target{}, fmt.Errorf("--model %s needs an endpoint: pass --base-url or set OPENAI_BASE_URL", model)
	}
	if t.KeyEnv != "" {
		t.APIKey = getenv(t.KeyEnv)
	}
	return t, nil
}

// ollamaBase turns OLLAMA_HOST ("host:port", "http://host:port", or empty)
// into the base of its OpenAI-compatible API.
func ollamaBase(host string) string {
	if host == "" {
		host = "127.0.0.1:11434"
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	return strings.TrimRight(host, "/") + "/v1"
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
