# VoiceEngine — quick start:
#   make demo   installs what is missing, builds, and runs the main job (a demo call)
#   make test   installs what is missing, builds, and passes the tests
#
# Each target first installs the Debian packages the project links against (only those absent).

APT_PACKAGES := libopus-dev libspeexdsp-dev libasound2-dev libssl-dev libspandsp-dev pkg-config
# Interoperability peers for the tests (software nobody here wrote): srtpenc/srtpdec, rtpopuspay/depay, opusdec;
# Kamailio (registrar and proxy, its db_text users) and SIPp (sip-tester) for VoiceSIP.
TEST_APT_PACKAGES := gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad tshark \
	kamailio sip-tester
# The calling client's service (VoiceClientTests, `make service`): Kamailio's auth_ephemeral and msilo (and the
# extra modules the service configuration grows into).
TEST_APT_PACKAGES += kamailio-autheph-modules kamailio-extra-modules
# The service's store (`make service`, VoiceClientTests' RegistrationStoreTests, ServiceRestartTests and every test
# of the service): PostgreSQL, and Kamailio's db_postgres for its registrations and stored messages.
TEST_APT_PACKAGES += postgresql kamailio-postgres-modules
# Managed push for calls (VoiceClientTests' ManagedPushTests): Kamailio's tsilo, http_client and htable.
TEST_APT_PACKAGES += kamailio-utils-modules
# baresip for VoiceSIP's call tests (Tests/VoiceSIPTests/BaresipTests.swift: the engine calls it and it calls the engine).
TEST_APT_PACKAGES += baresip
# linphonec, the second independent softphone of the telephony tests (Tests/VoiceSIPTests/LinphoneTests.swift: G.711
# only, speech and DTMF both ways, driven through VoiceTestSupport's LinphonePeer).
TEST_APT_PACKAGES += linphone-cli
# Headless Chromium: the browser peer of the WebRTC interoperability tests (VoiceWebRTCTests).
TEST_APT_PACKAGES += chromium
# coturn: the TURN server of the WebRTC transport tests (allocation with TURN REST credentials, relayed data).
TEST_APT_PACKAGES += coturn
# iproute2 and iptables: the NAT test's network namespaces and masquerading routers (skipped without root).
TEST_APT_PACKAGES += iproute2 iptables
# Kamailio's tls module: VoiceSIP's TLS tests register and call through Kamailio over `transport=tls`.
TEST_APT_PACKAGES += kamailio-tls-modules
# The openssl command: `make service` (Services/run-service.sh) makes the service's local CA and certificate with it,
# and the TLS tests (VoiceTestSupport's TestPKI) their throwaway CAs.
TEST_APT_PACKAGES += openssl
# The reference call of `voice-bench live` (its column is skipped with a message without it).
BENCH_APT_PACKAGES := baresip
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
SWIFT ?= swift

.PHONY: deps test-deps python-packages install-packages demo test test-fast vectors vectors-check bench bench-live bench-allocations fuzz fuzz-check asan tsan hostile soak clean

## Installs the missing Debian packages (apt-get update first, as a fresh machine needs).
deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(APT_PACKAGES)"

## Also the interoperability peers the tests run against.
test-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(APT_PACKAGES) $(TEST_APT_PACKAGES)"
	@$(MAKE) --no-print-directory python-packages

## The PESQ measure of the quality tests (ITU-T P.862 through the `pesq` package, from PyPI) and the room
## simulation of the realistic echo set (`pyroomacoustics`, for Benchmarks/scripts/aec-realistic.py). Where pip
## cannot install them, those tests skip and say why.
python-packages:
	@python3 -c "import numpy, scipy, pesq, pyroomacoustics" 2>/dev/null \
	  || python3 -m pip install -q numpy scipy pesq pyroomacoustics \
	  || echo "numpy, scipy, pesq and pyroomacoustics could not be installed with pip: the tests that need them skip"

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
## Serial, which is faster on a small machine; the parallel `swift test` passes too (a live call keeps its
## control plane off the cooperative pool and its media thread on SCHED_FIFO: LiveCallTests.UnderLoad).
## The log is kept in .build/test.log, and every failed expectation is printed again at its end, where a CI
## that shows only the tail of the output still shows which tests failed and why.
test: test-deps
	@mkdir -p .build
	@{ $(SWIFT) test --no-parallel 2>&1; echo $$? > .build/test.rc; } | tee .build/test.log
	@if [ "$$(cat .build/test.rc)" != 0 ]; then \
	  echo "== Failed expectations and tests (from .build/test.log) =="; \
	  grep -aE "✘|error:|Fatal error" .build/test.log | cut -c1-400 | tail -n 20; \
	fi
	@exit "$$(cat .build/test.rc)"

## The unit tests only, in a few minutes: every test tagged interop, live, cli, slow or root (Tests/VoiceTestSupport/
## Tags.swift) is skipped, by the trait that reads VOICE_TEST_FAST (swift test's --filter/--skip match names, not tags).
## Needs no peers installed.
test-fast: deps
	VOICE_TEST_FAST=1 $(SWIFT) test

## The calling client's service on loopback (PostgreSQL, Kamailio with Services/kamailio + the registration
## service), state in SERVICE_STATE and in PostgreSQL on 127.0.0.1:SERVICE_DB_PORT; Ctrl-C stops all. The first run
## makes a local CA (SERVICE_STATE/ca.pem) and a server certificate. Clients use --server 127.0.0.1, SIP over TLS on
## SERVICE_SIP_TLS_PORT, HTTPS on SERVICE_HTTP_PORT, and trust SERVICE_STATE/ca.pem (`voice-engine phone
## --ca-file`); UDP and TCP on SERVICE_SIP_PORT are for SIP peers. Prometheus metrics (plain HTTP, loopback):
## the registration service on SERVICE_HTTP_PORT + 1 (/metrics, /health), Kamailio on SERVICE_SIP_TLS_PORT + 1.
## Push through APNs and FCM is on when their settings are in the environment or in SERVICE_STATE/push.env
## (APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID, APNS_BUNDLE_ID; FCM_SERVICE_ACCOUNT; README "make service"); the
## script prints which platform is on.
SERVICE_STATE ?= .service-state
SERVICE_SIP_PORT ?= 5060
SERVICE_SIP_TLS_PORT ?= 5061
SERVICE_HTTP_PORT ?= 8443
SERVICE_DB_PORT ?= 5433
.PHONY: service
service: test-deps
	$(SWIFT) build --product voice-engine
	SIP_TLS_PORT=$(SERVICE_SIP_TLS_PORT) DB_PORT=$(SERVICE_DB_PORT) Services/run-service.sh $(SERVICE_STATE) $(SERVICE_SIP_PORT) $(SERVICE_HTTP_PORT) "$$($(SWIFT) build --show-bin-path)/voice-engine"

## Every call type of the calling client end to end (Services/demo-calls.sh): the service, baresip as SIP peer and
## phone gateway, the real `voice-engine conference-server`, two `voice-engine phone`s over TLS, then a phone-number
## call over G.711 (PCMA) with DTMF to SIPp standing in for a trunk with an IVR; prints a summary, fails unless all
## passed.
DEMO_CALLS_STATE ?= .demo-calls-state
DEMO_CALLS_PEER_PORT ?= 5070
.PHONY: demo-calls
demo-calls: test-deps
	$(SWIFT) build --product voice-engine
	SIP_TLS_PORT=$(SERVICE_SIP_TLS_PORT) Services/demo-calls.sh $(DEMO_CALLS_STATE) $(SERVICE_SIP_PORT) $(SERVICE_HTTP_PORT) $(DEMO_CALLS_PEER_PORT) "$$($(SWIFT) build --show-bin-path)/voice-engine"

## Regenerates TestVectors/*.wav from TestVectors/manifest.json.
vectors: deps
	$(SWIFT) run voice-engine vectors generate --directory TestVectors

## Runs the manifest's checks and prints the measured figures.
vectors-check: deps
	$(SWIFT) run voice-engine vectors check --directory TestVectors

## Swift wrappers against a plain C loop, side by side (ratios).
bench: deps
	$(SWIFT) run -c release --package-path Benchmarks voice-bench codec

## Real-time calls in one process (1, 10, 50) against fast time and a baresip call: CPU and wake-ups per call.
bench-live: deps
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(BENCH_APT_PACKAGES)"
	$(SWIFT) run -c release --package-path Benchmarks voice-bench live --calls 1 --calls 10 --calls 50 --calls 100 --repeats 6

## ordo-one/benchmark suites; fails when an allocation threshold (0 per block) is exceeded.
bench-allocations: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --no-progress thresholds check

## libFuzzer targets (Fuzz/): build, then fuzz each FUZZ_TIME seconds (600 by default), two at a time.
fuzz: deps
	SWIFT=$(SWIFT) Fuzz/run.sh --time $(or $(FUZZ_TIME),600) --parallel 2

## Replays seed corpora, saved corpora and crash inputs once (seconds).
fuzz-check: deps
	SWIFT=$(SWIFT) Fuzz/run.sh --check

## The test suite under AddressSanitizer (+ LeakSanitizer, with the suppressions in Fuzz/lsan-suppressions.txt).
asan: test-deps
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan
	LSAN_OPTIONS=suppressions=$(CURDIR)/Fuzz/lsan-suppressions.txt $(SWIFT) test --skip-build --no-parallel --sanitize=address --scratch-path .build-asan

## The test suite under ThreadSanitizer.
tsan: test-deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	$(SWIFT) test --skip-build --no-parallel --sanitize=thread --scratch-path .build-tsan

## Hostile network against a running MediaStream on loopback (floods, replays, wrong keys, lying RTCP, …).
hostile: deps
	$(SWIFT) test --filter HostileNetworkTests

## The one-hour fast-time soak call, in release (about 70 s here).
soak: deps
	VOICEENGINE_SOAK_MINUTES=60 $(SWIFT) test -c release --filter SoakTests

clean:
	rm -rf .build Benchmarks/.build Fuzz/.build

## Formatting (swift-format, configuration in .swift-format): `make format` rewrites the sources, `make format-check`
## fails when a file is not formatted (CI runs it).
FORMAT_PATHS := Package.swift Sources Tests Benchmarks/Package.swift Benchmarks/Sources Benchmarks/Benchmarks Fuzz/Package.swift Fuzz/Sources Fuzz/targets
.PHONY: format format-check
format:
	$(SWIFT) format format --in-place --parallel --recursive $(FORMAT_PATHS)
format-check:
	@SWIFT="$(SWIFT)" .ci/format-check $(FORMAT_PATHS)
