"""kiln_cc_fuzz_test: libFuzzer targets that double as cheap CI tests.

    load("//build:fuzz.bzl", "kiln_cc_fuzz_test")

    kiln_cc_fuzz_test(
        name = "parser_fuzz",
        srcs = ["parser_fuzz.cc"],      # defines LLVMFuzzerTestOneInput
        deps = [":parser"],
        corpus = glob(["testdata/parser_corpus/*"]),
    )

One cc_test target, two behaviours selected by //build:fuzzing:

* Normal build (gcc, what `./bazelw test //...` and CI use): the target is
  linked with //build:fuzz_driver_main, a standalone main() that replays every
  corpus file and then runs `smoke_iterations` deterministic pseudo-random
  mutations of them (seeded, so failures reproduce). A crash / sanitizer
  report fails the test. Works under --config=asan / --config=ubsan too.

* --config=fuzz (clang-14, -fsanitize=fuzzer-no-link,address): the target is
  linked with -fsanitize=fuzzer, i.e. it is a real libFuzzer binary:

      ./bazelw run --config=fuzz //ir:parser_fuzz -- -max_total_time=60
      ./bazelw run --config=fuzz //ir:parser_fuzz -- -max_total_time=0 /tmp/corpus  # unlimited, keep findings

  The corpus files are passed via -seed_inputs, and -max_total_time defaults
  to `fuzz_seconds` (later flags on the command line win), so
  `./bazelw test --config=fuzz //...` fuzzes every target for that long.

Corpus entries must be individual files (e.g. from glob()).
"""

load("@rules_cc//cc:defs.bzl", "cc_test")
load("//build:copts.bzl", "KILN_TEST_COPTS")

def kiln_cc_fuzz_test(
        name,
        srcs,
        deps = [],
        corpus = [],
        copts = None,
        smoke_iterations = 1000,
        fuzz_seconds = 20,
        tags = [],
        **kwargs):
    """A fuzz target (LLVMFuzzerTestOneInput in srcs) runnable as a test.

    Args:
      name: target name.
      srcs: sources; exactly one must define LLVMFuzzerTestOneInput
        (LLVMFuzzerInitialize is optional).
      deps: libraries under test.
      corpus: seed inputs (files), replayed in the smoke run and used as
        libFuzzer seeds under --config=fuzz.
      copts: defaults to KILN_TEST_COPTS.
      smoke_iterations: number of mutated inputs in the standalone smoke run.
      fuzz_seconds: default -max_total_time under --config=fuzz.
      tags: extra tags ("fuzz" is always added).
      **kwargs: passed to cc_test (size, timeout, visibility, ...).
    """
    seed_inputs = ",".join(["$(rootpath %s)" % c for c in corpus])
    fuzz_args = ["-max_total_time=%d" % fuzz_seconds]
    if corpus:
        fuzz_args.append("-seed_inputs=" + seed_inputs)

    cc_test(
        name = name,
        srcs = srcs,
        deps = deps + select({
            "//build:fuzzing": [],
            "//conditions:default": ["//build:fuzz_driver_main"],
        }),
        copts = KILN_TEST_COPTS if copts == None else copts,
        linkopts = select({
            "//build:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        # Link the fuzz target and the code under test into one binary.
        linkstatic = True,
        data = corpus,
        args = select({
            "//build:fuzzing": fuzz_args,
            "//conditions:default": ["--iterations=%d" % smoke_iterations] +
                                    ["$(rootpaths %s)" % c for c in corpus],
        }),
        tags = tags + ["fuzz"],
        **kwargs
    )
