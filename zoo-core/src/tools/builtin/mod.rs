//! Built-in tools for a coding or file assistant (issue 20). So far only the
//! piece every one of them stands on: [`workspace::Workspace`], which confines
//! the paths a model names to one root folder.

pub mod workspace;

pub use workspace::{PathRefused, Workspace};
