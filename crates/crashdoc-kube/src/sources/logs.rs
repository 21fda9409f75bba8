//! Current and, where a run ended, previous logs of every container (init
//! containers and sidecars too), bounded, token-like strings redacted.

use super::{Ctx, Output, Rule, Source, missing};
use crashdoc_core::ingest::bundle::BundleFile;
use futures::future::{BoxFuture, join_all};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

pub struct Logs;

static RBAC: &[Rule] = &[Rule::new("", "pods/log", &["get"])];

/// The logs to read: (container, previous), in spec order.
pub fn log_requests(pod: &Pod) -> Vec<(String, bool)> {
    let spec = pod.spec.clone().unwrap_or_default();
    let status = pod.status.clone().unwrap_or_default();
    let statuses: Vec<_> = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .collect();
    let mut out = Vec::new();
    for c in spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .map(|c| &c.name)
    {
        let st = statuses.iter().find(|s| &s.name == c);
        let started = st.is_some_and(|s| {
            s.state
                .as_ref()
                .is_some_and(|x| x.running.is_some() || x.terminated.is_some())
                || s.last_state
                    .as_ref()
                    .is_some_and(|x| x.terminated.is_some())
        });
        let ended_before = st.is_some_and(|s| {
            s.restart_count > 0
                || s.last_state
                    .as_ref()
                    .is_some_and(|x| x.terminated.is_some())
        });
        if started {
            out.push((c.clone(), false));
        }
        if ended_before {
            out.push((c.clone(), true));
        }
    }
    out
}

impl Source for Logs {
    fn name(&self) -> &'static str {
        "logs"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let jobs = log_requests(cx.pod);
            let api: Api<Pod> = cx.api();
            let results = join_all(jobs.iter().map(|(c, previous)| {
                let lp = LogParams {
                    container: Some(c.clone()),
                    previous: *previous,
                    tail_lines: cx.opts.log_lines,
                    limit_bytes: Some(cx.opts.log_bytes),
                    ..Default::default()
                };
                let api = &api;
                async move {
                    cx.count();
                    crate::retry::read(3, || api.logs(cx.name, &lp)).await
                }
            }))
            .await;
            let mut out = Output::default();
            for ((c, previous), r) in jobs.into_iter().zip(results) {
                match r {
                    Ok(text) => {
                        let redacted: String = text
                            .lines()
                            .map(|l| crashdoc_core::redact::redact(l).into_owned() + "\n")
                            .collect();
                        out.files.push((
                            BundleFile::Logs {
                                container: c,
                                previous,
                            },
                            redacted.into_bytes(),
                        ));
                    }
                    Err(e) => out.missing.push(missing(
                        format!("logs{} of {c}", if previous { " --previous" } else { "" }),
                        &e,
                        "get",
                        &RBAC[0],
                    )),
                }
            }
            out
        })
    }
}
