//! A whole paste, end to end: split, parse every section, diagnose, render.
#![no_main]

use crashdoc_core::diagnose::diagnose_all;
use crashdoc_core::ingest::read_paste;
use crashdoc_core::render::{self, Style};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // An error (empty, binary, nothing usable) is a valid answer; a panic is not.
    if let Ok(evidence) = read_paste(data, "fuzz") {
        let report = diagnose_all(&evidence);
        let _ = render::json(&report);
        let _ = render::terminal(&report, Style::plain());
        let _ = render::terminal(
            &report,
            Style {
                color: true,
                all: true,
            },
        );
        let _ = render::markdown(&report);
    }
});
