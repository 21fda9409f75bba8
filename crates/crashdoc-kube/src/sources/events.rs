//! The pod's events, by uid, as an EventList.

use super::{Ctx, Output, Rule, Source, json, missing};
use crashdoc_core::ingest::bundle::BundleFile;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};

pub struct Events;

static RBAC: &[Rule] = &[Rule::new("", "events", &["list"])];

impl Source for Events {
    fn name(&self) -> &'static str {
        "events"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let items = match cx.events {
                Some(ev) => Ok(ev.to_vec()),
                None => {
                    cx.count();
                    let api: Api<Event> = cx.api();
                    let uid = cx.pod.metadata.uid.clone().unwrap_or_default();
                    let lp = ListParams::default().fields(&format!("involvedObject.uid={uid}"));
                    crate::retry::read(3, || api.list(&lp))
                        .await
                        .map(|l| l.items)
                }
            };
            let mut out = Output::default();
            match items {
                Ok(items) => {
                    let items: Vec<Event> = items
                        .into_iter()
                        .map(|mut e| {
                            e.metadata.managed_fields = None;
                            e
                        })
                        .collect();
                    out.files.push((
                        BundleFile::Events,
                        json(&serde_json::json!({"kind": "EventList", "apiVersion": "v1", "items": items})),
                    ));
                }
                Err(e) => out.missing.push(missing("events", &e, "list", &RBAC[0])),
            }
            out
        })
    }
}
