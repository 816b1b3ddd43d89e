#[derive(
    clientgo_derive::CustomResource,
    clientgo_derive::CrdSchema,
    serde::Serialize,
    serde::Deserialize,
    Clone,
    Debug,
)]
#[resource(group = "nodots", version = "v1")]
struct ThingSpec {
    size: u32,
}

#[derive(
    clientgo_derive::CustomResource,
    clientgo_derive::CrdSchema,
    serde::Serialize,
    serde::Deserialize,
    Clone,
    Debug,
)]
#[resource(
    group = "example.com",
    version = "v1",
    kind = "Other",
    printcolumn(name = "Size", type = "int", json_path = ".spec.size")
)]
struct OtherSpec {
    size: u32,
}

#[derive(
    clientgo_derive::CustomResource,
    clientgo_derive::CrdSchema,
    serde::Serialize,
    serde::Deserialize,
    Clone,
    Debug,
)]
#[resource(group = "example.com", version = "V1", kind = "Third")]
struct ThirdSpec {
    size: u32,
}

fn main() {}
