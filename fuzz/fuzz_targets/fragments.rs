//! Container states found by key in any text (YAML or JSON fragments,
//! mangled pastes): never a panic, whatever the bytes.
#![no_main]

use crashdoc_core::ingest::{Doc, fragments};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let doc = Doc {
        name: "fuzz".into(),
        text: String::from_utf8_lossy(data).into_owned(),
        line_offset: 0,
    };
    for f in fragments::states(&doc) {
        assert!(f.state.reason.is_some() || f.state.exit_code.is_some());
    }
});
