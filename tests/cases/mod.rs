mod bite;
mod cli;
mod gate_go;
mod gate_node;
mod gate_python;
mod gate_rules;
mod gate_rust;
mod model;
