//! Running a backlog of tasks: for now the Kubernetes Indexed Job that runs one task per index.

pub mod k8s;
