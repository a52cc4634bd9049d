# VoiceEngine — quick start:
#   make demo   installs what is missing, builds, and runs the main job (a demo call)
#   make test   installs what is missing, builds, and passes the tests
#
# Each target first installs the Debian packages the project links against (only those absent).

APT_PACKAGES := libopus-dev libspeexdsp-dev libasound2-dev libsrtp2-dev pkg-config
# Interoperability peers for the tests (software nobody here wrote): srtpenc/srtpdec, rtpopuspay/depay, opusdec.
TEST_APT_PACKAGES := gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
SWIFT ?= swift

.PHONY: deps test-deps install-packages demo test vectors vectors-check bench bench-allocations clean

## Installs the missing Debian packages (apt-get update first, as a fresh machine needs).
deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(APT_PACKAGES)"

## Also the interoperability peers the tests run against.
test-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(APT_PACKAGES) $(TEST_APT_PACKAGES)"

install-packages:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

## The main job: a demo call.
demo: deps
	$(SWIFT) run voice-engine demo

## The whole test suite (unit tests, test-vector manifest, interoperability where the peers are installed).
## Serial: the suite holds real-time calls (a media thread on 10 ms deadlines, GStreamer peers) whose control
## tasks starve when CPU-heavy suites fill both cores of a small machine; serial is also faster there (~2.5 min).
test: test-deps
	$(SWIFT) test --no-parallel

## Regenerates TestVectors/*.wav from TestVectors/manifest.json.
vectors: deps
	$(SWIFT) run voice-engine vectors generate --directory TestVectors

## Runs the manifest's checks and prints the measured figures.
vectors-check: deps
	$(SWIFT) run voice-engine vectors check --directory TestVectors

## Swift wrappers against a plain C loop, side by side (ratios).
bench: deps
	$(SWIFT) run -c release --package-path Benchmarks voice-bench codec

## ordo-one/benchmark suites; fails when an allocation threshold (0 per block) is exceeded.
bench-allocations: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --no-progress thresholds check

clean:
	rm -rf .build Benchmarks/.build
