//! Links the crate against `libloadstate.so`.
//!
//! The places tried, in this order; the first that has the library wins:
//!
//! 1. `LOADSTATE_LIB_DIR`, when set (give an absolute path). It is an
//!    explicit choice, so it wins over an installed loadstate, and when the
//!    library is not there the build fails without trying the other places.
//!    `make test-rust` sets it to the repository's debug build, which is
//!    then the library tested even on a machine where loadstate is
//!    installed system-wide.
//! 2. `pkg-config loadstate` (the program `PKG_CONFIG` names, else
//!    `pkg-config`; it reads `PKG_CONFIG_PATH`): the `libdir` of an installed
//!    loadstate (`make install`, the `libloadstate-dev` package) whose major
//!    version is this crate's and whose minor version is at least this
//!    crate's.
//! 3. The repository's build folders, relative to this crate:
//!    `../../.build/debug` (`make lib`), `../../.build/release`, then
//!    `../../dist` (`make dist`: the self-contained release library).
//!
//! The chosen folder is also written into the binaries' rpath, so tests and
//! examples run without `LD_LIBRARY_PATH`. When no place has the library,
//! the error names each place and why it was passed over.

use std::env;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{self, Command};

const LIBRARY_FILE: &str = "libloadstate.so";
const PKG_CONFIG_PACKAGE: &str = "loadstate";

fn main() {
    for var in ["LOADSTATE_LIB_DIR", "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR"] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let mut tried = Vec::new();
    let dir = find_library(&mut tried).unwrap_or_else(|| {
        eprintln!("error: {LIBRARY_FILE} was not found. Places tried, in order:");
        for line in &tried {
            eprintln!("  {line}");
        }
        eprintln!(
            "Install loadstate (`make install` in the repository, or the libloadstate-dev package), \
             build it in the repository with `make lib`, or set LOADSTATE_LIB_DIR to the folder that holds it."
        );
        process::exit(1);
    });

    // Links to the library in OUT_DIR, which lies in the target folder:
    // `cargo run` and `cargo test` put such search folders on the dynamic
    // loader's path, so a crate that depends on this one runs from cargo
    // with no build script of its own. (The rpath below is for this crate's
    // own binaries only: cargo applies `rustc-link-arg` to no dependent.)
    match link_into_out_dir(&dir) {
        Ok(out) => println!("cargo:rustc-link-search=native={}", out.display()),
        Err(why) => {
            println!("cargo:warning=could not link {LIBRARY_FILE} into OUT_DIR ({why}); dependents need an rpath");
            println!("cargo:rustc-link-search=native={}", dir.display());
        }
    }
    println!("cargo:rustc-link-lib=dylib=loadstate");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    // Read by dependent build scripts as DEP_LOADSTATE_LIB_DIR.
    println!("cargo:lib_dir={}", dir.display());
}

/// Symbolic links in `OUT_DIR` to every `libloadstate.so*` of `dir` (the
/// library and its SONAME link); `OUT_DIR` itself.
fn link_into_out_dir(dir: &Path) -> io::Result<PathBuf> {
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or_else(|| io::Error::other("OUT_DIR is not set"))?);
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with(LIBRARY_FILE) {
            let link = out.join(&name);
            match std::fs::remove_file(&link) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            std::os::unix::fs::symlink(dir.join(&name), &link)?;
        }
    }
    Ok(out)
}

/// The folder to link from, or None with `tried` saying why each place failed.
fn find_library(tried: &mut Vec<String>) -> Option<PathBuf> {
    if let Some(dir) = env::var_os("LOADSTATE_LIB_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if has_library(&dir) {
            return Some(dir);
        }
        tried.push(format!(
            "LOADSTATE_LIB_DIR={}: no {LIBRARY_FILE} there; as LOADSTATE_LIB_DIR is set, no other place was tried",
            dir.display()
        ));
        return None;
    }
    tried.push("LOADSTATE_LIB_DIR: not set".to_string());

    match pkg_config_dir() {
        Ok(dir) => return Some(dir),
        Err(why) => tried.push(format!("pkg-config: {why}")),
    }

    for (dir, built_by) in repository_dirs() {
        if has_library(&dir) {
            // Absolute, but symbolic links kept: SwiftPM's `.build/debug` is
            // a link that follows the current build.
            return Some(std::path::absolute(&dir).unwrap_or(dir));
        }
        tried.push(format!("{}: no {LIBRARY_FILE} there ({built_by} builds it)", dir.display()));
    }
    None
}

fn has_library(dir: &Path) -> bool {
    let file = dir.join(LIBRARY_FILE);
    println!("cargo:rerun-if-changed={}", file.display());
    file.is_file()
}

/// The `libdir` of the installed loadstate that pkg-config knows, when its
/// version suits this crate and the folder has the library.
fn pkg_config_dir() -> Result<PathBuf, String> {
    let program = env::var_os("PKG_CONFIG").filter(|p| !p.is_empty()).unwrap_or_else(|| "pkg-config".into());
    let program = program.to_string_lossy().into_owned();
    let version = pkg_config(&program, &["--modversion", PKG_CONFIG_PACKAGE])?;
    let crate_version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    if !compatible(&version, &crate_version) {
        return Err(format!(
            "it finds loadstate {version}; this crate {crate_version} needs the same major version \
             and at least its minor version"
        ));
    }
    let dir = PathBuf::from(pkg_config(&program, &["--variable=libdir", PKG_CONFIG_PACKAGE])?);
    if dir.as_os_str().is_empty() {
        return Err(format!("loadstate {version}'s loadstate.pc names no libdir"));
    }
    if !has_library(&dir) {
        return Err(format!("loadstate {version}'s libdir {} has no {LIBRARY_FILE}", dir.display()));
    }
    Ok(dir)
}

/// One run of pkg-config: its output trimmed, or why it failed.
fn pkg_config(program: &str, args: &[&str]) -> Result<String, String> {
    let command = format!("`{program} {}`", args.join(" "));
    let output = Command::new(program).args(args).output().map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => format!("{program} is not installed"),
        _ => format!("{command} could not run: {e}"),
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let reason = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        return Err(format!("{command} failed ({}): {reason}", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Whether a library of version `found` has everything a crate of version
/// `wanted` calls: the same major version, a minor version at least as new.
fn compatible(found: &str, wanted: &str) -> bool {
    let parse = |v: &str| -> Option<(u64, u64)> {
        let mut parts = v.split('.');
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    };
    match (parse(found), parse(wanted)) {
        (Some((found_major, found_minor)), Some((major, minor))) => found_major == major && found_minor >= minor,
        _ => false,
    }
}

/// The repository's build folders, each with the command that fills it.
fn repository_dirs() -> [(PathBuf, &'static str); 3] {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let repository = manifest.parent().and_then(|p| p.parent()).unwrap_or(&manifest);
    [
        (repository.join(".build").join("debug"), "`make lib`"),
        (repository.join(".build").join("release"), "`swift build -c release --product loadstate`"),
        (repository.join("dist"), "`make dist`"),
    ]
}
