# lane's two everyday commands: `make build` and `make test`.
GO ?= go

.PHONY: build test test-deps bench
build:
	$(GO) build -o lane ./cmd/lane

# The end-to-end tests drive the real Claude Code CLI, pinned in
# testdata/runtimes/package-lock.json and installed from npm.
test-deps:
	@test -x testdata/runtimes/node_modules/@anthropic-ai/claude-code-linux-x64/claude || \
		npm ci --prefix testdata/runtimes --no-audit --no-fund
	$(GO) mod download

test: test-deps
	$(GO) vet ./...
	$(GO) test -race -timeout 20m ./...

# Speed and memory figures (see README "Performance").
bench: test-deps
	$(GO) test -run '^$$' -bench . -benchmem ./streamjson/ ./store/ ./agent/ ./tools/
	$(GO) test -run '^$$' -bench . -benchtime 5x ./e2e/
