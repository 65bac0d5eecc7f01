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
