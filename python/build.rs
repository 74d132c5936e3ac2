//! Compiles the tensor hand-over (src/tensor_glue.cpp) against the headers of the libtorch the
//! workspace builds with (`LIBTORCH`: the PyPI torch 2.13.0 wheel's, or 2.14/2.15 for the wheel's
//! other extensions) and Python's, and links
//! libtorch_python, which the user's `import torch` has already loaded when the module is.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/tensor_glue.cpp");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
    let libtorch = PathBuf::from(env::var("LIBTORCH").expect(
        "LIBTORCH is not set: build from the repository (its .cargo/config.toml points it at .libtorch/site/torch; \
         scripts/setup-libtorch.sh installs it)",
    ));
    let python = env::var("PYO3_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(&python)
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['include'])"])
        .output()
        .unwrap_or_else(|e| panic!("could not run {python} to find Python's headers: {e}"));
    assert!(output.status.success(), "{python} could not report its include folder");
    let python_include = String::from_utf8(output.stdout).expect("a UTF-8 path").trim().to_string();
    // torch's version, from the wheel the headers come from: the module reports it, and
    // `hedge/__init__.py`'s check must agree with it (python/tests/test_package.py).
    let version_py = std::fs::read_to_string(libtorch.join("version.py")).unwrap_or_default();
    let version = version_py
        .lines()
        .find_map(|l| l.strip_prefix("__version__ = "))
        .map(|v| v.trim_matches(|c| c == '\'' || c == '"').to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=HEDGE_LIBTORCH_VERSION={version}");
    cc::Build::new()
        .cpp(true)
        .file("src/tensor_glue.cpp")
        .include(libtorch.join("include"))
        .include(libtorch.join("include/torch/csrc/api/include"))
        .include(python_include)
        .flag(cxx_standard(&libtorch))
        // The PyPI wheels are built with the C++11 ABI (torch._C._GLIBCXX_USE_CXX11_ABI is True).
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-deprecated-declarations")
        .warnings(false)
        .compile("hedge_tensor_glue");
    println!("cargo:rustc-link-search=native={}", libtorch.join("lib").display());
    println!("cargo:rustc-link-lib=dylib=torch_python");
}

/// `-std=c++20` for torch 2.14 and later, whose headers need it, `-std=c++17` before (as the
/// patched torch-sys in vendor/ decides for its wrappers), from the headers' own version.
fn cxx_standard(libtorch: &std::path::Path) -> &'static str {
    let header = libtorch.join("include/torch/headeronly/version.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let text = std::fs::read_to_string(&header).unwrap_or_default();
    let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse::<u32>().ok()));
    match (field("#define TORCH_VERSION_MAJOR "), field("#define TORCH_VERSION_MINOR ")) {
        (Some(major), Some(minor)) if (major, minor) >= (2, 14) => "-std=c++20",
        _ => "-std=c++17",
    }
}
