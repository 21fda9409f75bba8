//! Speed: 10,000 objects read and linted, on one core. Prints objects/s.
//! Target: under 1 s (`cargo bench -p crashdoc-lint --bench lint`).

use crashdoc_lint::{Options, input::Input, lint};
use std::time::Instant;

fn main() {
    // A realistic mix: every check's documented example and near miss,
    // repeated with distinct names until there are 10,000 objects.
    let mut docs = Vec::new();
    for c in crashdoc_lint::checks::ALL {
        docs.push(c.example);
        docs.push(c.near_miss);
    }
    let mut text = String::new();
    let mut n = 0usize;
    let mut i = 0usize;
    while n < 10_000 {
        let d = docs[i % docs.len()];
        let objs = d.matches("\nkind: ").count() + usize::from(d.starts_with("kind: "));
        text.push_str(&d.replace("  name: ", &format!("  name: r{i}-")));
        text.push_str("---\n");
        n += objs.max(1);
        i += 1;
    }
    let mb = text.len() as f64 / 1e6;
    let t0 = Instant::now();
    let mut input = Input::default();
    if let Err(e) = input.read_bytes("bench.yaml", text.as_bytes()) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    let t_read = t0.elapsed();
    let opts = Options::default();
    let t1 = Instant::now();
    let report = lint(&input, &opts);
    let t_lint = t1.elapsed();
    let total = t0.elapsed().as_secs_f64();
    println!(
        "lint bench: {} objects ({mb:.1} MB of YAML), {} findings; read {:.0} ms, lint {:.0} ms, total {:.0} ms = {:.0} objects/s (target: 10,000 in < 1 s)",
        input.objects.len(),
        report.findings.len(),
        t_read.as_secs_f64() * 1e3,
        t_lint.as_secs_f64() * 1e3,
        total * 1e3,
        input.objects.len() as f64 / total
    );
}
