//! The YAML/JSON object walker (and its tolerant fallback reader).
#![no_main]

use crashdoc_core::ingest::{Doc, objects};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let doc = Doc {
        name: "pod.yaml".to_string(),
        text,
        line_offset: 0,
    };
    let _ = objects::parse(&doc);
});
