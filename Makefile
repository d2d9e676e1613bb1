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
# checks of the scripted servers, soaks, the cases of opencode and Qwen
# Code beyond the ones that tell most: a run of either costs about 10
# CPU-seconds), and runs without the race
# detector: instrumenting lane's packages (SQLite's transpiled C above all)
# more than doubles the suite's CPU, and the suite is bound by CPU on 2
# cores. make test-long runs the long tests and every package lane is made
# of under -race. CI runs both. vet, the packages' own tests and the
# end-to-end package (which builds lane and drives the real CLIs) run at
# once: the end-to-end tests wait on those CLIs, on Podman and on scripted
# clocks more than they compute, so four of them run at a time on two
# cores.
# A test that needs a system tool the machine lacks (Chromium, Podman,
# pytest, CMake…) skips, and logs the skip in a folder of this run's own
# ($LANE_SKIP_LOG, see internal/testkit/needs); the last lines name each
# missing tool, how many tests it kept from running and the command that
# installs it, whether the tests passed or not.
LONG = Long$$
UNIT = $$($(GO) list ./... | grep -v '/e2e$$')
SKIPSUMMARY = ./internal/testkit/needs/skipsummary
test: test-deps
	@skips=$$(mktemp -d) || exit 1; trap 'rm -rf "$$skips"' EXIT; export LANE_SKIP_LOG="$$skips"; \
	$(GO) test -skip '$(LONG)' -parallel 4 -timeout 20m ./e2e/ & e2e=$$!; \
	$(GO) vet ./... & vet=$$!; \
	$(GO) test -skip '$(LONG)' -timeout 20m $(UNIT); unit=$$?; \
	wait $$vet; vet=$$?; wait $$e2e; e2e=$$?; \
	echo; $(GO) run $(SKIPSUMMARY) "$$skips"; \
	test $$unit -eq 0 && test $$vet -eq 0 && test $$e2e -eq 0

test-long: test-deps
	$(GO) test -race -timeout 40m $(UNIT)
	$(GO) test -run '$(LONG)' -timeout 40m ./e2e/

# Speed and memory figures (see docs/performance.md).
bench: test-deps
	$(GO) test -run '^$$' -bench . -benchmem ./internal/runtimes/claude/streamjson/ ./internal/store/ ./internal/agent/ ./internal/agent/tools/
	$(GO) test -run '^$$' -bench . -benchmem ./internal/approval/dbdesk/ ./internal/telemetry/
	$(GO) test -run '^$$' -bench . -benchtime 20x ./internal/changes/
	$(GO) test -run '^$$' -bench BenchOverhead ./internal/bench/
	$(GO) test -run '^$$' -bench AttemptFolder -benchtime 5x ./internal/bench/
	$(GO) test -run '^$$' -bench ContainerAttempt -benchtime 2x ./internal/bench/
	$(GO) test -run '^$$' -bench 'EventToWebsocket' -benchtime 2000x ./internal/dashboard/
	$(GO) test -run '^$$' -bench 'IdleDashboard' -benchtime 6x ./internal/dashboard/
	$(GO) test -run '^$$' -bench . -skip 'PoolScaling|CostsVsCcusage' -benchtime 5x ./e2e/
	$(GO) test -run '^$$' -bench PoolScaling -benchtime 1x -timeout 30m ./e2e/
	$(GO) test -run '^$$' -bench CostsVsCcusage -benchtime 1x -timeout 60m ./e2e/

# make lint: gofmt, go vet and staticcheck, which CI runs before the tests.
# gofmt reads the tracked Go files but those in testdata/ and examples/,
# which are other projects' code kept as it ships; gofmt comes from the
# same Go as $(GO), and staticcheck is the version go.mod's tool directive
# pins.
.PHONY: lint
lint:
	@files=$$(git ls-files '*.go' | grep -vE '(^|/)(testdata|examples)/'); \
	unformatted=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$files) || exit 1; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt -l lists files that are not gofmt-formatted (run gofmt -w on them):"; \
		echo "$$unformatted"; exit 1; \
	fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
