//! The Foo records: state the controller keeps outside the ownerReference tree, and the reason
//! its Foos carry a finalizer.
//!
//! For every Foo, the controller keeps one entry in a ConfigMap that all the Foos of a
//! namespace share, [`RECORDS`]: the key is the Foo's name, the value the name of the
//! Deployment it runs. Read it as a stand-in for state kept outside the cluster, such as a
//! DNS record, a row in an inventory database or a cloud load balancer: something a Foo
//! creates and that must go when the Foo goes.
//!
//! Garbage collection cannot remove it. The garbage collector deletes whole objects whose
//! owners are gone, and an entry in a shared object has no owner: the ConfigMap itself must
//! outlive any one Foo, so it carries no ownerReference. The controller therefore removes the
//! entry itself, behind its finalizer (see [`crate::finalizer`]), while the Deployment is left
//! to garbage collection.
//!
//! Like a real external system, the records are not watched by an informer. [`ensure`] reads
//! the entry and writes only when it differs, so a Foo in its steady state costs one read and
//! no write. Both writes are JSON merge patches of the one key (`{"data": {"<foo>": ...}}`):
//! they leave the other Foos' entries alone, so writers of different keys never collide and
//! need no resourceVersion. A `null` value removes the key, which makes [`remove`] idempotent:
//! removing an entry that is already gone, or from a ConfigMap that is gone, succeeds.

use std::collections::BTreeMap;

use clientgo::rest::{GetParams, PatchParams, PatchType, PostParams, ResourceClient, RestClient};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::json;

use crate::controller::CONTROLLER_NAME;

/// The name of the ConfigMap holding the records of a namespace's Foos.
pub const RECORDS: &str = "foo-records";

fn configmaps(client: &RestClient, namespace: &str) -> ResourceClient<ConfigMap> {
    ResourceClient::namespaced(client, namespace)
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(CONTROLLER_NAME.to_owned()),
        ..PatchParams::default()
    }
}

/// The entry of Foo `foo` in `namespace`, if any.
pub async fn entry(
    client: &RestClient,
    namespace: &str,
    foo: &str,
) -> Result<Option<String>, clientgo::rest::Error> {
    match configmaps(client, namespace)
        .get(RECORDS, &GetParams::default())
        .await
    {
        Ok(records) => Ok(records.data.and_then(|mut data| data.remove(foo))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Makes the entry of Foo `foo` say `deployment`; returns whether it had to write.
///
/// Creates the ConfigMap when it does not exist. If another writer creates it first, the
/// create fails with AlreadyExists and the caller's retry patches it instead.
pub async fn ensure(
    client: &RestClient,
    namespace: &str,
    foo: &str,
    deployment: &str,
) -> Result<bool, clientgo::rest::Error> {
    let records = configmaps(client, namespace);
    match records.get(RECORDS, &GetParams::default()).await {
        Ok(existing) => {
            let current = existing.data.as_ref().and_then(|data| data.get(foo));
            if current.map(String::as_str) == Some(deployment) {
                return Ok(false);
            }
            let patch = json!({"data": {foo: deployment}});
            records
                .patch(RECORDS, PatchType::Merge, &patch, &patch_params())
                .await?;
        }
        Err(e) if e.is_not_found() => {
            let created = ConfigMap {
                metadata: meta::ObjectMeta {
                    name: Some(RECORDS.to_owned()),
                    namespace: Some(namespace.to_owned()),
                    ..meta::ObjectMeta::default()
                },
                data: Some(BTreeMap::from([(foo.to_owned(), deployment.to_owned())])),
                ..ConfigMap::default()
            };
            let post = PostParams {
                field_manager: Some(CONTROLLER_NAME.to_owned()),
                ..PostParams::default()
            };
            records.create(&created, &post).await?;
        }
        Err(e) => return Err(e),
    }
    Ok(true)
}

/// Removes the entry of Foo `foo`: the cleanup behind the finalizer. Succeeds when there is
/// nothing to remove.
pub async fn remove(
    client: &RestClient,
    namespace: &str,
    foo: &str,
) -> Result<(), clientgo::rest::Error> {
    let patch = json!({"data": {foo: null}});
    match configmaps(client, namespace)
        .patch(RECORDS, PatchType::Merge, &patch, &patch_params())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}
