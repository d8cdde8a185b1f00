# Starline command-line toolkit. `make` builds release binaries; `make test` runs every test.
# Every target that builds runs scripts/bootstrap first, so a fresh Debian machine needs nothing else.

PREFIX ?= /usr/local
# The tools as Package.swift declares them (its `tools` list is the one place a tool is named).
TOOLS := $(shell scripts/tools)
RELEASE_FLAGS := -c release --static-swift-stdlib --disable-local-rpath
RELEASE_BIN = $(shell swift build $(RELEASE_FLAGS) --show-bin-path)
DEBUG_BIN = $(shell swift build --show-bin-path)

.PHONY: all build bootstrap test tsan generated format install uninstall deb package-check fresh-check demo torture fuzz bench bench-tasks clean

all: build

bootstrap:
	@scripts/bootstrap

# libStarlineZXing.so (sl-qr decode's second engine, C++) is built beside the tools by scripts/build-zxing.
build: bootstrap
	swift build $(RELEASE_FLAGS)
	scripts/build-zxing $(RELEASE_BIN) release

# The build must print no warning (compiler or linker): its output is kept in .build/test-build.log and any
# "warning:" in it fails the target, listing the lines. CI builds a clean checkout, so every file is compiled
# and every warning is seen; an incremental build only re-reports the files it recompiles. A log check, not
# -warnings-as-errors: changing the compiler flags would make every other target rebuild everything.
test: bootstrap
	@mkdir -p .build
	@# The tree is formatted (make format): swift format's line limit and layout (.swift-format, layout only,
	@# no rewriting rules), long help text as multi-line literals.
	@scripts/wrap-long-strings --check $$(find Sources Tests -name '*.swift') && swift format lint -r --strict Sources Tests || \
		{ echo "make test: the sources are not formatted: run make format" >&2; exit 1; }
	@echo "swift build --build-tests  (output: .build/test-build.log)"
	@{ swift build --build-tests 2>&1; echo $$? > .build/test-build.status; } | tee .build/test-build.log
	@status=$$(cat .build/test-build.status); [ "$$status" = 0 ] || exit $$status
	@scripts/build-zxing $(DEBUG_BIN) debug 2>&1 | tee -a .build/test-build.log
	@if grep -q 'warning:' .build/test-build.log; then \
		echo "make test: the build printed warnings (see .build/test-build.log):" >&2; \
		grep 'warning:' .build/test-build.log | grep -v '^ *[0-9]* *|' | sort -u >&2; \
		exit 1; \
	fi
	@# The watchdog names a test that hangs (the tests running, their processes, the stacks) and ends the run
	@# after 45 minutes, so that CI reports the hang instead of timing out with a stale log.
	scripts/test-watchdog --stall 600 --limit 2700 --events .build/test-events.jsonl -- swift test --skip-build

# Man pages and completions, rendered from each tool's command spec, and the README's requirement index
# (committed; tests check they are current).
generated: bootstrap
	scripts/embed-openapi
	scripts/requirement-index
	swift build
	@set -e; for t in $(TOOLS); do \
		$(DEBUG_BIN)/$$t --generate man > man/man1/$$t.1; \
		$(DEBUG_BIN)/$$t --generate bash > completions/bash/$$t; \
		$(DEBUG_BIN)/$$t --generate zsh > completions/zsh/_$$t; \
		$(DEBUG_BIN)/$$t --generate fish > completions/fish/$$t.fish; \
		echo "generated man page and completions for $$t"; \
	done

# Formats Sources and Tests: long one-line string literals become multi-line literals with line continuations
# (their values unchanged), then swift format (the toolchain's) lays out every file by .swift-format.
format:
	scripts/wrap-long-strings $$(find Sources Tests -name '*.swift')
	swift format -i -r Sources Tests

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/starline $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	@set -e; for t in $(TOOLS); do \
		install -m 0755 -s $(RELEASE_BIN)/$$t $(DESTDIR)$(PREFIX)/bin/$$t; \
		install -m 0644 man/man1/$$t.1 $(DESTDIR)$(PREFIX)/share/man/man1/$$t.1; \
		install -m 0644 completions/bash/$$t $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$t; \
		install -m 0644 completions/zsh/_$$t $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_$$t; \
		install -m 0644 completions/fish/$$t.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/$$t.fish; \
	done
	install -m 0644 -s $(RELEASE_BIN)/libStarlineZXing.so $(DESTDIR)$(PREFIX)/lib/starline/libStarlineZXing.so

# Removes exactly the files `make install` puts there, for the tools scripts/tools lists (same DESTDIR and
# PREFIX); nothing else. The directories stay: they may hold other packages' files.
uninstall:
	@set -e; for t in $(TOOLS); do \
		for f in bin/$$t share/man/man1/$$t.1 share/bash-completion/completions/$$t \
			share/zsh/site-functions/_$$t share/fish/vendor_completions.d/$$t.fish; do \
			if [ -e "$(DESTDIR)$(PREFIX)/$$f" ] || [ -L "$(DESTDIR)$(PREFIX)/$$f" ]; then \
				rm -f "$(DESTDIR)$(PREFIX)/$$f" && echo "removed $(DESTDIR)$(PREFIX)/$$f"; \
			fi; \
		done; \
	done
	@if [ -e "$(DESTDIR)$(PREFIX)/lib/starline/libStarlineZXing.so" ]; then \
		rm -f "$(DESTDIR)$(PREFIX)/lib/starline/libStarlineZXing.so" && echo "removed $(DESTDIR)$(PREFIX)/lib/starline/libStarlineZXing.so"; \
		rmdir "$(DESTDIR)$(PREFIX)/lib/starline" 2>/dev/null || true; \
	fi

# .build/starline_<version>_<arch>.deb: the release binaries, man pages and completions under /usr (scripts/deb).
deb: build
	@scripts/bootstrap --package
	@MAKE="$(MAKE)" scripts/deb > /dev/null

# Installs the .deb into a throwaway Debian 12 chroot with apt, runs every tool, purges it and checks nothing
# is left; and checks make install + make uninstall in a temporary DESTDIR. Needs root and, the first time,
# the network (debootstrap, the package's dependencies). Not part of `make test`: it needs a release build.
package-check: deb
	@MAKE="$(MAKE)" scripts/package-check

# The README's two commands (make demo, then make test) in a throwaway Debian 12 chroot that has only the Swift
# toolchain (and make): a clean clone of HEAD, every other package installed by scripts/bootstrap, everything
# built from nothing. Root and the network; 20–30 minutes. Not part of `make test`.
fresh-check:
	@scripts/bootstrap --package
	@scripts/fresh-debian-check

demo: build
	@scripts/demo $(RELEASE_BIN)

# kill -9 loops, 50 concurrent processes per store and devserver fault storms against the release build;
# one summary line per store, exit 0 only when nothing was lost, duplicated or corrupted. Not in `make test`.
TORTURE_SECONDS ?= 30
torture: build
	@scripts/torture $(RELEASE_BIN) $(TORTURE_SECONDS)

# The benchmarks measure what ships: the binaries as `make install` leaves them (stripped).
BENCH_PREFIX := $(CURDIR)/.build/bench-install

bench: build
	@scripts/bootstrap --bench
	$(MAKE) install PREFIX=$(BENCH_PREFIX) > /dev/null
	bench/run $(BENCH_PREFIX)/bin
	bench/qr-accuracy $(BENCH_PREFIX)/bin
	bench/devserver $(BENCH_PREFIX)/bin
	bench/sessions $(BENCH_PREFIX)/bin
	bench/sessions-bulk $(BENCH_PREFIX)/bin
	bench/sessions-fleet $(BENCH_PREFIX)/bin
	bench/sessions-parallel $(BENCH_PREFIX)/bin
	bench/sessions-ceiling $(BENCH_PREFIX)/bin
	bench/tasks $(BENCH_PREFIX)/bin
	bench/memory $(BENCH_PREFIX)/bin
	bench/chat $(BENCH_PREFIX)/bin
	bench/keyring $(BENCH_PREFIX)/bin
	@# Every median against the last recorded (bench/baseline.tsv): more than 20 % worse fails the target.
	bench/guard

# Only the sl-tasks benchmarks (10,000-task workspace vs jq, add, start-up).
bench-tasks: build
	@scripts/bootstrap --bench
	$(MAKE) install PREFIX=$(BENCH_PREFIX) > /dev/null
	bench/tasks $(BENCH_PREFIX)/bin

# libFuzzer targets with the address sanitizer (fuzz/Package.swift, a package of its own): each runs for
# FUZZ_SECONDS (default 60) from its seed corpus in fuzz/corpus/; findings fail the target (scripts/fuzz).
fuzz: bootstrap
	scripts/fuzz

# ThreadSanitizer over the in-process test targets (the end-to-end ones run the tools, which are not built with
# it; the photo corpus needs the ZXing-C++ shim beside the binary). A build of its own in .build/tsan: -static
# (sl-tasks) cannot link the sanitizer's runtime, so only the test product is built. Any report fails it.
TSAN_SUITES = StarlineCoreTests\.|StarlinePlatformTests\.|StarlineQRTests\.|StarlineWorkspaceTests\.|StarlineMemoryTests\.|StarlineCryptoTests\.|StarlineKeyringTests\.
# The runtime's own executor (STARLINE_TEST_WIDTH=0): the sanitizer watches the concurrency the tools run with, and
# at 8 threads under its overhead the timed waits of a few tests run out. Unoptimised (STARLINE_ONONE=1, see
# Package.swift): optimised, the standard library's store of a count of 0 into the one shared empty array (an
# Array(unsafeUninitializedCapacity: 0)) is inlined into our code, where the sanitizer sees it and reports every
# such pair as a race on _swiftEmptyArrayStorage; and the optimised sanitizer build took 3 times as long.
tsan: bootstrap
	STARLINE_ONONE=1 swift build --sanitize=thread --scratch-path .build/tsan --product StarlinePackageTests
	STARLINE_TEST_WIDTH=0 TSAN_OPTIONS="halt_on_error=1 abort_on_error=0 exitcode=66" \
		"$$(STARLINE_ONONE=1 swift build --sanitize=thread --scratch-path .build/tsan --show-bin-path)/StarlinePackageTests.xctest" \
		--testing-library swift-testing --filter '$(TSAN_SUITES)' --skip PhotoCorpusTests

clean:
	swift package clean
