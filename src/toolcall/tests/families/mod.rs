//! One file per format family, with realistic samples (the longer ones under tests/data/toolcall/).

mod apertus;
mod bare_json;
mod deepseek;
mod function_tag;
mod functionary;
mod gemma;
mod glm;
mod harmony;
mod invoke;
mod kimi;
mod mistral;
mod pythonic;
mod qwen_xml;
mod solar;
mod tagged_json;

use super::*;

const OFFERED: &str = "offered: read_file, edit, write_file, list_files, search, run_tests, submit";
