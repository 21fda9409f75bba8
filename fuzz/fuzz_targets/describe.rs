//! `kubectl describe pod` parser: any bytes, decoded lossily, must parse
//! without a panic.
#![no_main]

use crashdoc_core::ingest::{Doc, describe};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let doc = Doc {
        name: "describe-pod.txt".to_string(),
        text,
        line_offset: 0,
    };
    let _ = describe::parse(&doc);
});
