"""compile_fail_test: a snippet that must not compile, and the first error line it must give.

Each test compiles one snippet with the build's flags (g++ -std=c++20 -Wall -Wextra -Werror,
tower's include paths; Hana from /usr/include) and, when clang++ is installed, with clang++ too.
The snippet's comments hold the expectation (see run_compile_fail.sh):

    // expect: grad: argnums index 2 is out of range for a function of 2 arguments
    // expect-clang: "grad: an argnums index is out of range for a function of this many arguments"

A snippet whose expectation is "(compiles)" is a control that must compile.
"""

def compile_fail_test(name, src, **kwargs):
    """One sh_test: compiles `src`, checks the outcome against its `// expect:` lines."""
    native.sh_test(
        name = name,
        size = kwargs.pop("size", "small"),
        srcs = ["//tests/compile_fail:run_compile_fail.sh"],
        args = ["$(location %s)" % src],
        data = [src, "//:headers"],
        tags = kwargs.pop("tags", []) + ["compile_fail"],
        **kwargs
    )

def compile_fail_suite(name, srcs):
    """A compile_fail_test per snippet (named after it) and a test_suite `name` of them all."""
    tests = []
    for src in srcs:
        test = src[:-len(".cpp")] if src.endswith(".cpp") else src
        compile_fail_test(name = test, src = src)
        tests.append(test)
    native.test_suite(name = name, tests = tests, tags = ["compile_fail"])
