//! The README's parameter table is the core's knob table
//! (`hpcc_core::knobs::TABLE`, which also makes the module's parameters
//! and their `modinfo` descriptions). `HPCC_UPDATE_README=1 cargo test -p
//! hpcc-core --test knobs_table` rewrites it.

use hpcc_core::knobs::{KnobInfo, Knobs, ACL_KNOB, IFACES_KNOB, TABLE};
use std::path::PathBuf;

const BEGIN: &str = "<!-- knobs: generated from rust/hpcc_core/knobs.rs (rust/hpcc_core/tests/knobs_table.rs) -->";
const END: &str = "<!-- knobs: end -->";

fn row(k: &KnobInfo) -> String {
    let default = k.default.map_or("empty (none)".to_string(), |d| d.to_string());
    format!("| `{}` | {} | {} | {} |", k.name, k.desc.replace('*', "\\*"), k.range, default)
}

fn table() -> String {
    let mut out = vec![BEGIN.to_string(), "| parameter | meaning | range | default |".into(), "| --- | --- | --- | --- |".into()];
    out.extend(TABLE.iter().chain([&ACL_KNOB, &IFACES_KNOB]).map(row));
    out.push(END.into());
    out.join("\n")
}

#[test]
fn readme_parameter_table_is_the_knob_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (Some(a), Some(b)) = (text.find(BEGIN), text.find(END)) else {
        panic!("README.md has no generated parameter table ({BEGIN} ... {END})");
    };
    let current = &text[a..b + END.len()];
    let want = table();
    if current != want && std::env::var_os("HPCC_UPDATE_README").is_some() {
        std::fs::write(&path, format!("{}{}{}", &text[..a], want, &text[b + END.len()..])).unwrap();
        return;
    }
    assert_eq!(current, want, "README.md's parameter table differs from the knob table; HPCC_UPDATE_README=1 rewrites it");
}

#[test]
fn every_knob_is_in_the_table_once_with_its_default() {
    let names: Vec<_> = TABLE.iter().map(|k| k.name).collect();
    for (i, (name, v)) in Knobs::DEFAULT.entries().iter().enumerate() {
        assert_eq!(names[i], *name);
        assert_eq!(TABLE[i].default, Some(*v));
        assert!(!TABLE[i].desc.is_empty() && !TABLE[i].range.is_empty());
    }
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len());
}

/// The tests' copy of the defaults, `selftests/lib/knob_defaults`: what
/// `hpcc-replay --knobs` prints (`knobs::Defaults`). `HPCC_UPDATE_README=1`
/// rewrites it too.
#[test]
fn selftests_read_the_knob_tables_defaults() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../selftests/lib/knob_defaults");
    let want = hpcc_core::knobs::Defaults.to_string();
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current != want && std::env::var_os("HPCC_UPDATE_README").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    assert_eq!(current, want, "selftests/lib/knob_defaults differs from the knob table; HPCC_UPDATE_README=1 rewrites it");
}

/// The README's prose names a few defaults ("`probe_dscp` (default 11)")
/// and its nftables example the two DSCPs: each must be the table's.
#[test]
fn readme_prose_defaults_are_the_tables() {
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let mut seen = 0;
    for k in TABLE.iter() {
        let pat = format!("`{}` (default ", k.name);
        for (i, _) in text.match_indices(&pat) {
            let rest = &text[i + pat.len()..];
            let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            assert_eq!(n.parse::<u32>().ok(), k.default, "README: {pat}{n}");
            seen += 1;
        }
    }
    assert!(seen >= 2, "the README names the DSCPs' defaults");
    let d = Knobs::DEFAULT;
    let dscps = format!("dscp {{ {}, {} }}", d.probe_dscp, d.response_dscp);
    let examples = text.matches("dscp {").count();
    assert_eq!(text.matches(&dscps).count(), examples, "README's nftables example: {dscps}");
    assert!(examples > 0);
}
