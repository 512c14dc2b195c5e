//! `benchrig schema playbook`: the playbook format as a JSON Schema, on
//! stdout, for editors (`# yaml-language-server: $schema=…`).

use crate::cli::{SchemaArgs, SchemaKind};
use crate::exit_code;
use crate::playbook::schema;

pub fn run(args: SchemaArgs) -> anyhow::Result<i32> {
    let document = match args.what {
        SchemaKind::Playbook => schema::playbook(),
    };
    outln!("{}", serde_json::to_string_pretty(&document)?)?;
    Ok(exit_code::OK)
}
