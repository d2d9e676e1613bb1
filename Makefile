# lane's two everyday commands: `make build` and `make test`.
GO ?= go

.PHONY: build test test-long test-deps bench
build:
	$(GO) build -o lane ./cmd/lane

# The end-to-end tests drive the real agent CLIs (Claude Code, Codex, Gemini
# CLI, opencode, Qwen Code), pinned in testdata/runtimes/package-lock.json
# and installed from npm, again whenever the pins change (a stamp file
# newer than the lock). `npm install` rather than `npm ci`: the lock
# cannot list the other platforms' builds of opencode and of a Qwen Code
# dependency that the registry here does not serve, and npm ci refuses such
# a lock; npm install follows it all the same and leaves it unchanged.
RUNTIMES_STAMP = testdata/runtimes/node_modules/.lane-installed
$(RUNTIMES_STAMP): testdata/runtimes/package.json testdata/runtimes/package-lock.json
	npm install --prefix testdata/runtimes --no-audit --no-fund
	# ccusage's native build comes without its exec bit (its JS launcher
	# sets it on first use); the tests run the native binary directly.
	chmod +x testdata/runtimes/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage
	touch $@

test-deps: $(RUNTIMES_STAMP)
	$(GO) mod download

# make test skips the long tests, the ones whose name ends in Long (the
# pool's fault and scaling cases, the ccusage comparison, the CLIs' own
# checks of the scripted servers, soaks); make test-long runs just those.
# CI runs both. The end-to-end package runs beside the others and without
# -race: it drives the lane binary, which is built without it, so the
# detector would only watch the harness; every package lane is made of
# runs under -race in its own tests.
LONG = Long$$
test: test-deps
	$(GO) vet ./...
	@$(GO) test -skip '$(LONG)' -timeout 20m ./e2e/ & e2e=$$!; \
	$(GO) test -race -skip '$(LONG)' -timeout 20m $$($(GO) list ./... | grep -v '^lane/e2e$$'); unit=$$?; \
	wait $$e2e; e2e=$$?; \
	test $$unit -eq 0 && test $$e2e -eq 0

test-long: test-deps
	$(GO) test -race -run '$(LONG)' -timeout 40m $$($(GO) list ./... | grep -v '^lane/e2e$$')
	$(GO) test -run '$(LONG)' -timeout 40m ./e2e/

# Speed and memory figures (see README "Performance").
bench: test-deps
	$(GO) test -run '^$$' -bench . -benchmem ./streamjson/ ./store/ ./agent/ ./tools/
	$(GO) test -run '^$$' -bench . -benchmem ./broker/ ./telemetry/
	$(GO) test -run '^$$' -bench . -benchtime 20x ./changes/
	$(GO) test -run '^$$' -bench BenchOverhead ./bench/
	$(GO) test -run '^$$' -bench AttemptFolder -benchtime 5x ./bench/
	$(GO) test -run '^$$' -bench 'EventToWebsocket' -benchtime 2000x ./dashboard/
	$(GO) test -run '^$$' -bench 'IdleDashboard' -benchtime 6x ./dashboard/
	$(GO) test -run '^$$' -bench . -skip 'PoolScaling|CostsVsCcusage' -benchtime 5x ./e2e/
	$(GO) test -run '^$$' -bench PoolScaling -benchtime 1x -timeout 30m ./e2e/
	$(GO) test -run '^$$' -bench CostsVsCcusage -benchtime 1x -timeout 60m ./e2e/
