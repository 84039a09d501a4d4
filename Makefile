# erode: hand-written Makefile (redis src/Makefile style).
#   make                 build ./erode
#   make check           unit tests (Check), integration tests, man page lint
#   make SANITIZE=1 ...  the same with ASan + UBSan (objects go to build-san/)
#   make OPENMP=0 ...    build without OpenMP (same results, one thread)
#   make VULKAN=0|1 ...  Vulkan backend off / required (default auto: built when
#                        pkg-config finds vulkan and glslangValidator is on PATH)
#   make bench           build the benchmark programs used by scripts/bench
#   make fuzz            libFuzzer targets (clang), each run FUZZ_SECONDS (not in check)
#   make install PREFIX=/usr/local DESTDIR= MANDIR=$(PREFIX)/share/man (+ BASHCOMPDIR):
#                        erode, scripts/erode-tiles and cut-tiles, the man pages, configs,
#                        bash completion

VERSION   := 0.1.0
PKG_CONFIG ?= pkg-config
CC        ?= cc
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
MANDIR    ?= $(PREFIX)/share/man
DATADIR   ?= $(PREFIX)/share/erode
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
OPENMP    ?= 1
SANITIZE  ?= 0
WERROR    ?= 1
VULKAN    ?= auto
GLSLANG   ?= glslangValidator

ifeq ($(SANITIZE),1)
BUILD     ?= build-san
SANFLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT       ?= -O1 -g
# The test runs' leak suppressions: the Vulkan driver's, never erode's
# (tests/lsan.supp; the unit suite "sanitize" proves both).
# Two integration scripts at a time, not three (tests/integration/run.sh):
# this pass has no time budget, and its scripts' waits for a checkpoint
# or a lock were sized with two beside the unit tests.
SAN_ENV   := LSAN_OPTIONS="suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0$${LSAN_OPTIONS:+:$$LSAN_OPTIONS}" \
             ER_JOBS=$${ER_JOBS:-2}
CK_SLOW   := CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-5}
else
CK_SLOW   :=
BUILD     ?= build
SANFLAGS  :=
SAN_ENV   :=
OPT       ?= -O2 -g
endif
BIN       ?= erode
# Quiet rules unless V=1.
ifeq ($(V),1)
Q :=
else
Q := @
endif

PKGS      := libtiff-4 libpng libcjson libdeflate libzstd OpenEXR
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)

# The Vulkan backend: the device layer in core/vulkan/ and each model's
# path in its own directory (core/<model>/vulkan*.c and the GLSL of
# core/<model>/shaders/), built only with Vulkan: the loader through
# pkg-config, shaders compiled to SPIR-V by glslangValidator at build time
# and embedded.  A shader whose source has the line VK_DP_MARK is built a
# second time with DenormPreserve declared (NAME_dp.spv.h); its model
# picks one build per device.
ifeq ($(VULKAN),0)
HAVE_VULKAN := 0
else
HAVE_VULKAN := $(shell $(PKG_CONFIG) --exists vulkan 2>/dev/null && command -v $(GLSLANG) >/dev/null 2>&1 && echo 1 || echo 0)
ifeq ($(VULKAN)$(HAVE_VULKAN),10)
$(error VULKAN=1: needs the Vulkan loader (pkg-config vulkan: libvulkan-dev) and $(GLSLANG) (glslang-tools))
endif
endif
VK_MODEL_SRC := $(sort $(wildcard core/*/vulkan*.c))
VK_COMP   := $(sort $(wildcard core/*/shaders/*.comp))
VK_DP_MARK := // erode: also-denorm-preserve
ifeq ($(HAVE_VULKAN),1)
VK_DP_COMP := $(if $(VK_COMP),$(shell grep -lx '$(VK_DP_MARK)' $(VK_COMP)))
VK_CPPFLAGS := -DER_HAVE_VULKAN=1 $(patsubst %/,-I$(BUILD)/%,$(sort $(dir $(VK_COMP)))) \
               $(shell $(PKG_CONFIG) --cflags vulkan)
VK_LIBS   := $(shell $(PKG_CONFIG) --libs vulkan)
VK_SRC    := $(filter-out core/vulkan/none.c,$(sort $(wildcard core/vulkan/*.c))) $(VK_MODEL_SRC)
VK_SPV_H  := $(VK_COMP:%.comp=$(BUILD)/%.spv.h) $(VK_DP_COMP:%.comp=$(BUILD)/%_dp.spv.h)
else
VK_CPPFLAGS :=
VK_LIBS   :=
VK_SRC    := core/vulkan/none.c
VK_SPV_H  :=
endif
CHECK_LIBS   := $(shell $(PKG_CONFIG) --libs check zlib 2>/dev/null)

# Warnings after the user's CFLAGS (redis WARN).  -Wconversion applies to the
# project's own code; the Check macros in tests are not clean under it.
WARN      := -std=c11 -pedantic -Wall -Wextra -Wshadow -Wcast-qual \
             -Wstrict-prototypes -Wmissing-prototypes -Wundef -Wpointer-arith \
             -Wvla -Wformat=2 -Wwrite-strings -Wno-sign-conversion
SRC_WARN  := $(WARN) -Wconversion
ifeq ($(WERROR),1)
WARN      += -Werror
SRC_WARN  += -Werror
endif

# No contraction into FMA and no fast-math, so results are the same bits on
# every machine (CONTRIBUTING.md "Style").
FPFLAGS   := -ffp-contract=off -fno-fast-math
ifeq ($(OPENMP),1)
OMPFLAGS  := -fopenmp
endif

BASE_CPPFLAGS := -D_POSIX_C_SOURCE=200809L -DERODE_VERSION='"$(VERSION)"' -I$(BUILD)/gen -I.
ALL_CPPFLAGS := $(BASE_CPPFLAGS) $(VK_CPPFLAGS) $(CPPFLAGS)
# The test build's (see $(TM) below).
TM        := $(BUILD)/test-models
TM_CPPFLAGS := -DER_TEST_MODELS -I$(TM)/gen
ALL_CFLAGS   := $(OPT) $(FPFLAGS) $(OMPFLAGS) $(SANFLAGS) $(CFLAGS) $(PKG_CFLAGS)
ALL_LDFLAGS  := $(OMPFLAGS) $(SANFLAGS) $(LDFLAGS)
LIBS         := $(PKG_LIBS) $(VK_LIBS) -lm

CORE_SRC  := $(sort $(filter-out core/vulkan/% $(VK_MODEL_SRC),$(wildcard core/*.c core/*/*.c))) $(VK_SRC)
IO_SRC    := $(sort $(wildcard io/*.c))
CLI_SRC   := $(sort $(wildcard cli/*.c))
LIB_OBJ   := $(CORE_SRC:%.c=$(BUILD)/%.o) $(IO_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC  := $(sort $(wildcard tests/unit/check_*.c))
UNIT_OBJ  := $(UNIT_SRC:%.c=$(BUILD)/%.o) $(BUILD)/tests/unit/runner.o
SUITES    := $(patsubst tests/unit/check_%.c,%,$(UNIT_SRC))

# The key table as text for the documentation lint (tests/keys-dump.c).
KEYS_DUMP := $(BUILD)/tests/keys-dump

BENCH_SRC := $(sort $(wildcard scripts/bench_*.c))
BENCH_BIN := $(BENCH_SRC:scripts/%.c=$(BUILD)/%)

.PHONY: all check unit integration lint bench install uninstall clean
all: $(BIN)

$(BIN): $(CLI_OBJ) $(BUILD)/liberode.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/liberode.a $(LIBS)

$(BUILD)/liberode.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# SPIR-V embedded as a C array er_spv_<name> (each header included by one
# .c), core/<model>/shaders/<name>.comp to $(BUILD)/core/<model>/shaders/.
$(BUILD)/core/%.spv.h: core/%.comp
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GLSL    $<")
	$(Q)$(GLSLANG) -V --target-env vulkan1.1 --quiet --vn er_spv_$(subst -,_,$(notdir $*)) -o $@ $< >/dev/null

# The shaders marked VK_DP_MARK again with ER_DENORM_PRESERVE defined,
# er_spv_<name>_dp.
$(BUILD)/core/%_dp.spv.h: core/%.comp
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GLSL    $< (DenormPreserve)")
	$(Q)$(GLSLANG) -V --target-env vulkan1.1 --quiet -DER_DENORM_PRESERVE --vn er_spv_$(subst -,_,$(notdir $*))_dp -o $@ $< >/dev/null

$(VK_SRC:%.c=$(BUILD)/%.o): $(VK_SPV_H)
$(VK_SPV_H): $(wildcard core/*/shaders/*.glsl)

# Every object depends on the compiler and flags it was built with: a build
# after the packages changed (VULKAN=auto found the loader where it did not
# before) or with other flags recompiles instead of linking stale objects.
# (make check's sub-makes write it at once: each through its own file.)
BUILD_FLAGS := $(CC) $(TM_CPPFLAGS) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(SRC_WARN) $(CHECK_CFLAGS) | $(ALL_LDFLAGS) $(LIBS)
$(BUILD)/flags: FORCE
	@mkdir -p $(@D)
	@printf '%s\n' '$(subst ','"'"',$(BUILD_FLAGS))' > $@.$$$$; \
	cmp -s $@.$$$$ $@ 2>/dev/null && rm -f $@.$$$$ || mv $@.$$$$ $@
$(LIB_OBJ) $(CLI_OBJ) $(UNIT_OBJ) $(BUILD)/tests/keys-dump.o $(BIN) $(BENCH_BIN) $(TM_LIB_OBJ) $(TM_CLI_OBJ): $(BUILD)/flags

# The commit erode --version names: `git describe` of this source tree,
# "unknown" outside git (or inside another repository).  Rewritten only
# when it changes, so a new commit recompiles cli/options.c alone.  The
# scratch file is this shell's own: make check's unit, lint and
# integration makes run this rule at the same time.
ERODE_COMMIT = $(shell [ "$$(git -C '$(CURDIR)' rev-parse --show-toplevel 2>/dev/null)" = '$(CURDIR)' ] && \
                 git -C '$(CURDIR)' describe --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/gen/er_commit.h: FORCE
	@mkdir -p $(@D)
	@printf '#define ERODE_COMMIT "%s"\n' '$(ERODE_COMMIT)' > $@.$$$$.new && \
	{ cmp -s $@.$$$$.new $@ 2>/dev/null && rm -f $@.$$$$.new || mv $@.$$$$.new $@; }
$(BUILD)/cli/options.o $(TM)/cli/options.o: $(BUILD)/gen/er_commit.h

# The model list (core/models.def, one line a model) as the includes of
# each model's params header, core/<name>/params.h, which core/params.h
# takes in: the preprocessor cannot write an #include, so make does.
MODELS_SED := s|^ER_MODEL([A-Z_0-9]*, *\([a-z_0-9]*\))$$|\#include "core/\1/params.h"|p
$(BUILD)/gen/er_model_params.h: core/models.def
	@mkdir -p $(@D)
	$(Q)sed -n '$(MODELS_SED)' $< > $@.new && mv $@.new $@

# The bench records' per-cell-per-step rates, for erode --plan's time
# estimate (cli/plan.c): the records stay the one place of each figure.
$(BUILD)/gen/er_bench_rates.h: scripts/bench-rates.awk $(wildcard man/bench/*.txt)
	@mkdir -p $(@D)
	$(Q)awk -f $< $(sort $(wildcard man/bench/*.txt)) > $@.new && mv $@.new $@
$(BUILD)/cli/plan.o $(TM)/cli/plan.o: $(BUILD)/gen/er_bench_rates.h

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(SRC_WARN) -MMD -MP -c -o $@ $<

# The test build: the library and the CLI again, with the test-only model
# list (tests/models/models.def, its models in tests/models/<name>/) after
# the shipped one, into $(TM): the unit tests link it, and its erode runs
# the test models from the command line (tests/integration/92-test-model.sh).
# The shipped binary, --print-recipe and the man pages never see them.
TM_SRC    := $(sort $(wildcard tests/models/*/*.c))
TM_LIB_OBJ := $(CORE_SRC:%.c=$(TM)/%.o) $(IO_SRC:%.c=$(TM)/%.o) $(TM_SRC:%.c=$(TM)/%.o)
TM_CLI_OBJ := $(CLI_SRC:%.c=$(TM)/%.o)
TM_SED    := s|^ER_MODEL([A-Z_0-9]*, *\([a-z_0-9]*\))$$|\#include "tests/models/\1/params.h"|p
$(TM)/gen/er_model_params.h: core/models.def tests/models/models.def
	@mkdir -p $(@D)
	$(Q){ sed -n '$(MODELS_SED)' core/models.def; sed -n '$(TM_SED)' tests/models/models.def; } > $@.new && mv $@.new $@

$(TM)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (test models)")
	$(Q)$(CC) $(TM_CPPFLAGS) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(SRC_WARN) -MMD -MP -c -o $@ $<
$(TM)/core/mei/%.o: ALL_CFLAGS += -fno-math-errno
$(VK_SRC:%.c=$(TM)/%.o): $(VK_SPV_H)

$(TM)/liberode.a: $(TM_LIB_OBJ)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

$(TM)/erode: $(TM_CLI_OBJ) $(TM)/liberode.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(TM_CLI_OBJ) $(TM)/liberode.a $(LIBS)

# Mei's square root (core/mei/mei_internal.h er_sqrt) vectorises only
# without errno; no caller reads it and its argument is never negative.
$(BUILD)/core/mei/%.o: ALL_CFLAGS += -fno-math-errno

# Test and bench objects: the project's warnings less -Wconversion; the
# unit tests' with the test models (they link the test build's library).
$(UNIT_OBJ): TESTS_CPPFLAGS := $(TM_CPPFLAGS)
$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(TESTS_CPPFLAGS) $(ALL_CPPFLAGS) -I$(BUILD)/tests/unit $(ALL_CFLAGS) $(CHECK_CFLAGS) $(WARN) -MMD -MP -c -o $@ $<

$(BUILD)/tests/unit/suites.h: FORCE
	@mkdir -p $(@D)
	@printf '%s\n' $(foreach s,$(SUITES),'ER_SUITE($(s))') > $@.new
	@cmp -s $@.new $@ 2>/dev/null && rm -f $@.new || mv $@.new $@
$(BUILD)/tests/unit/runner.o: $(BUILD)/tests/unit/suites.h
.PHONY: FORCE
FORCE:

$(BUILD)/check_unit: $(UNIT_OBJ) $(TM)/liberode.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(UNIT_OBJ) $(TM)/liberode.a $(CHECK_LIBS) $(LIBS)

$(KEYS_DUMP): $(BUILD)/tests/keys-dump.o $(BUILD)/liberode.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/liberode.a $(LIBS)

$(BUILD)/bench_%: scripts/bench_%.c $(BUILD)/liberode.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(WARN) -o $@ $< $(BUILD)/liberode.a $(ALL_LDFLAGS) $(LIBS)

bench: $(BIN) $(BENCH_BIN)

# Passive OpenMP waiting, as erode itself chooses (cli/main.c): spinning
# threads of a unit test on a loaded CI machine took the SPH still-water
# case past its timeout.  Check's timeouts only catch a hung test: Check's
# own default (4 s) failed a correct test on a loaded machine, so tests
# without a timeout of their own get 60 s, and the sanitizer build, about
# 5x slower, every timeout 5x.  Lavapipe runs the unit tests' dispatches
# in the calling thread (LP_NUM_THREADS=0): its worker threads cost the
# Vulkan suite 102 s of CPU against 74 s, for the same wall time alone on
# two cores (the dispatches are small), and the suite shares those cores
# with the integration scripts.  The repeatability tests ask for workers
# again (so that workgroups run in parallel where a missing barrier
# shows), and the integration scripts run lavapipe with its default.
unit: $(BUILD)/check_unit
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} CK_DEFAULT_TIMEOUT=$${CK_DEFAULT_TIMEOUT:-60} \
	LP_NUM_THREADS=$${LP_NUM_THREADS:-0} \
	$(CK_SLOW) $(SAN_ENV) ER_SRCDIR=$(CURDIR) ER_RESULTS=$(BUILD)/results.unit $(BUILD)/check_unit

integration: $(BIN) $(TM)/erode
	$(SAN_ENV) ERODE=$(CURDIR)/$(BIN) ERODE_TEST_MODELS=$(CURDIR)/$(TM)/erode ER_RESULTS=$(CURDIR)/$(BUILD)/results.integration sh tests/integration/run.sh

lint: $(BIN) $(KEYS_DUMP)
	$(SAN_ENV) sh tests/lint.sh $(BIN) $(KEYS_DUMP) $(BUILD)

# The unit tests and lint run beside the integration scripts (two of them
# at a time, tests/integration/run.sh), so the suite keeps both cores of a
# CI machine busy to its end; the unit and lint logs are printed when all
# are done.
check: $(BIN) $(BUILD)/check_unit $(KEYS_DUMP) $(TM)/erode
	@rm -rf $(BUILD)/results.*
	@status=0; \
	$(MAKE) --no-print-directory unit > $(BUILD)/results.unit.log 2>&1 & unit=$$!; \
	$(MAKE) --no-print-directory lint > $(BUILD)/results.lint.log 2>&1 & lint=$$!; \
	$(MAKE) --no-print-directory integration || status=1; \
	wait $$unit || status=1; cat $(BUILD)/results.unit.log; \
	wait $$lint || status=1; cat $(BUILD)/results.lint.log; \
	sh tests/summary.sh $(BUILD) || status=1; \
	exit $$status

install: $(BIN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(DATADIR)/configs
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/erode
	install -m 755 scripts/erode-tiles scripts/cut-tiles $(DESTDIR)$(BINDIR)/
	install -m 644 man/erode.1 $(DESTDIR)$(MANDIR)/man1/erode.1
	install -m 644 man/erode-recipe.5 $(DESTDIR)$(MANDIR)/man5/erode-recipe.5
	install -m 644 man/erode-models.7 $(DESTDIR)$(MANDIR)/man7/erode-models.7
	install -m 644 configs/*.json $(DESTDIR)$(DATADIR)/configs/
	install -m 644 man/erode-json.schema.json $(DESTDIR)$(DATADIR)/erode-json.schema.json
	install -d $(DESTDIR)$(DATADIR)/configs/masks
	install -m 644 configs/masks/*.tif $(DESTDIR)$(DATADIR)/configs/masks/
	install -d $(DESTDIR)$(BASHCOMPDIR)
	install -m 644 scripts/completion/erode.bash $(DESTDIR)$(BASHCOMPDIR)/erode

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/erode $(DESTDIR)$(BINDIR)/erode-tiles $(DESTDIR)$(BINDIR)/cut-tiles \
	      $(DESTDIR)$(MANDIR)/man1/erode.1 $(DESTDIR)$(MANDIR)/man5/erode-recipe.5 \
	      $(DESTDIR)$(MANDIR)/man7/erode-models.7
	rm -rf $(DESTDIR)$(DATADIR)
	rm -f $(DESTDIR)$(BASHCOMPDIR)/erode

clean:
	rm -rf build build-san build-novk $(BIN)

# libFuzzer targets (tests/fuzz/): the io/ and core/ sources built again
# with clang, libFuzzer, ASan and UBSan, without OpenMP, into build-fuzz/.
# `make fuzz` runs tests/data/bad through each target, then fuzzes each
# FUZZ_SECONDS from its seed corpus, and fails on any crash (see
# tests/fuzz/README); `make fuzz-build` only builds.  Not part of `make check`.
FUZZ_CC      ?= clang
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_TARGETS := tiff png recipe checkpoint resume
FUZZ_CFLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=all $(FPFLAGS) $(CFLAGS) $(PKG_CFLAGS)
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined $(LDFLAGS)
# clang's -Wformat=2 also flags vsnprintf(fmt, ap) in libtiff's handlers.
FUZZ_NOWARN  := -Wno-format-nonliteral
# (the parsers only: the objects are built as without Vulkan, so the
# models' ops name no Vulkan path and core/vulkan/none.c stands in for the
# device layer)
FUZZ_LIB_OBJ := $(filter-out $(FUZZ_BUILD)/core/vulkan/% $(VK_MODEL_SRC:%.c=$(FUZZ_BUILD)/%.o),\
                  $(CORE_SRC:%.c=$(FUZZ_BUILD)/%.o)) \
                $(FUZZ_BUILD)/core/vulkan/none.o $(IO_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_CPPFLAGS := $(BASE_CPPFLAGS) $(CPPFLAGS)
FUZZ_BIN     := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_OBJ     := $(FUZZ_LIB_OBJ) $(FUZZ_BIN)

.PHONY: fuzz fuzz-build clean-fuzz
fuzz-build: $(FUZZ_BIN)

fuzz: $(FUZZ_BIN)
	FUZZ_BUILD=$(FUZZ_BUILD) sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (fuzz)")
	$(Q)$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) $(SRC_WARN) $(FUZZ_NOWARN) -MMD -MP -c -o $@ $<

$(FUZZ_BUILD)/liberode.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_util.h $(FUZZ_BUILD)/liberode.a
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) $(WARN) $(FUZZ_NOWARN) -o $@ $< $(FUZZ_BUILD)/liberode.a $(FUZZ_LDFLAGS) $(LIBS)

clean-fuzz:
	rm -rf $(FUZZ_BUILD)
clean: clean-fuzz

# Every compiled file may include core/params.h, and so the model list's
# includes: written before the first compile (after it, the .d files know).
$(LIB_OBJ) $(CLI_OBJ) $(UNIT_OBJ) $(BUILD)/tests/keys-dump.o $(BENCH_BIN) $(FUZZ_OBJ): | $(BUILD)/gen/er_model_params.h
$(TM_LIB_OBJ) $(TM_CLI_OBJ) $(UNIT_OBJ): | $(TM)/gen/er_model_params.h

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
-include $(shell find $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
