//! crashdoc-core: the evidence model, the parsers of every input form, the
//! rules and the renderers. No network and no async runtime: everything
//! here runs the same on a live capture, a saved folder or a paste.
//!
//! ```no_run
//! let evidence = crashdoc_core::ingest::read_path(std::path::Path::new("examples/vllm-oom"))?;
//! let report = crashdoc_core::diagnose::diagnose_all(&evidence);
//! println!("{}", crashdoc_core::render::json(&report));
//! # Ok::<(), crashdoc_core::ingest::InputError>(())
//! ```

pub mod catalog;
pub mod causes;
pub mod changes;
pub mod classes;
pub mod debugging;
pub mod diagnose;
pub mod hint;
pub mod hosts;
pub mod images;
pub mod ingest;
pub mod model;
pub mod redact;
pub mod render;
pub mod rules;
pub mod scan;
pub mod strength;
pub mod text;
pub mod time;

/// Build the rule catalog's matchers and the message classes now; otherwise
/// they are built on first use. The live commands call this on a thread of
/// its own while their API requests are in flight, so that the analysis
/// that follows them does not wait for it. Idempotent and cheap once built.
pub fn warm() {
    let _ = scan::Catalog::global();
    let _ = classes::all();
}

pub use causes::Cause;
pub use diagnose::{Diagnosis, Report, diagnose_all};
pub use hint::Hint;
pub use ingest::{Evidence, InputError, read_paste, read_path};
