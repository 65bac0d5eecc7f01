//! Helpers shared by the host tests that check a C header under
//! `include/` against the Rust core.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// `include/`.
pub fn include_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../include")
}

/// Every object-like `#define NAME <integer literal>` in `include/<file>`,
/// except its include guard.
pub fn header_defines(file: &str) -> BTreeMap<String, u64> {
    let path = include_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        if it.next() != Some("#define") {
            continue;
        }
        let Some(name) = it.next() else { continue };
        if name.contains('(') || (name.starts_with('_') && name.ends_with("_H")) {
            continue;
        }
        let lit = it.next().unwrap_or_else(|| panic!("#define {name} has no value"));
        let lit = lit.trim_end_matches(['u', 'U', 'l', 'L']);
        let v = match lit.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => lit.parse(),
        }
        .unwrap_or_else(|_| panic!("#define {name} {lit}: not an integer literal"));
        assert!(out.insert(name.to_string(), v).is_none(), "{name} defined twice");
    }
    out
}

/// Asserts that the header's defines and `rust` are the same set.
pub fn assert_same_defines(file: &str, rust: &BTreeMap<String, u64>) {
    let h = header_defines(file);
    for (k, v) in rust {
        assert_eq!(h.get(k), Some(v), "{k}: {file} vs Rust");
    }
    for k in h.keys() {
        assert!(rust.contains_key(k), "{k} is in {file} but has no Rust counterpart");
    }
}

/// Whether `tool --version` runs.
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

/// Compiles and runs a C program (with `-I include/`) and returns its
/// standard output; `None` (a SKIP note on stderr) without a C compiler.
pub fn run_c(tag: &str, src: &str) -> Option<String> {
    if !have("cc") {
        eprintln!("SKIP: no C compiler");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("hpcc-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (c, exe) = (dir.join("t.c"), dir.join("t"));
    std::fs::write(&c, src).unwrap();
    let st = Command::new("cc")
        .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(include_dir())
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(st.success(), "{tag}: does not compile cleanly with cc");
    let out = Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Some(String::from_utf8(out.stdout).unwrap())
}

/// Compiles `src` (with `-I include/`) for BPF with clang; panics with
/// clang's messages if it fails; a SKIP note without clang.
pub fn compile_bpf(tag: &str, src: &str) {
    if !have("clang") {
        eprintln!("SKIP: no clang");
        return;
    }
    let dir = std::env::temp_dir().join(format!("hpcc-{tag}-bpf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("t.bpf.c");
    std::fs::write(&c, src).unwrap();
    let mut cmd = Command::new("clang");
    cmd.args(["--target=bpf", "-O2", "-Wall", "-Werror", "-c", "-I"]).arg(include_dir());
    // Debian keeps <asm/types.h> under the multiarch directory.
    for d in ["/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu"] {
        if std::path::Path::new(d).exists() {
            cmd.arg("-I").arg(d);
        }
    }
    let out = cmd.arg(&c).arg("-o").arg(dir.join("t.o")).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
