"""tower's external repositories, for tower's own WORKSPACE and for projects that use tower.

A consumer's WORKSPACE:

    local_repository(name = "tower", path = "path/to/tower")   # or http_archive
    load("@tower//:deps.bzl", "tower_dependencies")
    tower_dependencies()

and its .bazelrc: `build --cxxopt=-std=c++20` (a header-only cc_library cannot pass copts to the
targets that include it). Everything comes from the local machine (Debian packages, see
scripts/bootstrap), so Bazel runs offline. A repository the WORKSPACE already declares is left
as it is.
"""

def _tower_directory_impl(ctx):
    # The directory of `marker`, a file inside tower: linked in whole, so that its path is found
    # wherever tower is checked out (native.local_repository takes paths relative to the
    # consumer's workspace).
    src = ctx.path(ctx.attr.marker).dirname
    for child in src.readdir():
        ctx.symlink(child, child.basename)

_tower_directory = repository_rule(
    implementation = _tower_directory_impl,
    attrs = {"marker": attr.label(allow_single_file = True)},
    local = True,
)

def tower_dependencies():
    """Declares rules_cc, rules_java, remote_coverage_tools, boost_hana and eigen."""
    existing = native.existing_rules()

    # rules_cc stand-in: forwards the rule names to Bazel's native rules.
    if "rules_cc" not in existing:
        _tower_directory(name = "rules_cc", marker = Label("//third_party/rules_cc:BUILD"))

    # rules_java from Debian's bazel-rules-java package.
    if "rules_java" not in existing:
        native.local_repository(name = "rules_java", path = "/usr/share/bazel/rules/java")

    # Stand-in for the coverage tools Bazel's test rules reference.
    if "remote_coverage_tools" not in existing:
        _tower_directory(name = "remote_coverage_tools", marker = Label("//third_party/remote_coverage_tools:BUILD"))

    # System headers from Debian packages.
    if "boost_hana" not in existing:
        native.new_local_repository(
            name = "boost_hana",
            build_file = str(Label("//third_party/system:boost_hana.BUILD")),
            path = "/usr/include",
        )
    if "eigen" not in existing:
        native.new_local_repository(
            name = "eigen",
            build_file = str(Label("//third_party/system:eigen.BUILD")),
            path = "/usr/include/eigen3",
        )
