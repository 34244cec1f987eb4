//! The platform-free halves of the worker's adapters: what it sends to and reads from the outside (Step
//! Functions and SigV4, the IdP's tokens and discovery, mail, chat, DynamoDB items and conditions, D1's
//! errors, the SPA's assets, cross-account federation). The worker's halves do the I/O.

pub mod assets;
pub mod aws_target;
pub mod chat;
pub mod d1;
pub mod discovery;
pub mod dynamo;
pub mod federation;
pub mod guard_ddb;
pub mod idp;
pub mod jwks;
pub mod jwt;
pub mod keyring;
pub mod mail;
pub mod schedule_ddb;
pub mod sfn;
pub mod sigv4;
pub mod webpush;
