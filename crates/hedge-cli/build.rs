//! Adds the absolute path of the project's libtorch to the `hedge` binary's rpath, so a copy of
//! the binary outside target/ (or `cargo install --path`) still finds libtorch on this machine.
//! The relative $ORIGIN paths in .cargo/config.toml cover binaries inside target/.
fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if let Ok(libtorch) = std::env::var("LIBTORCH") {
        let lib = std::path::Path::new(&libtorch).join("lib");
        if let Ok(lib) = lib.canonicalize() {
            println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{}", lib.display());
        }
    }
}
