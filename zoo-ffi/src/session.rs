//! `zoo_session_store`: the SQLite file conversations are kept in (config
//! keys `session_store` and `session`), to list, load, rename, delete,
//! export and import sessions from C.

use std::ffi::c_char;

use zoo_core::SessionStore;

use crate::agent::zoo_agent;
use crate::boundary::{guard, guard_void, handle_arg, into_c_string, out_arg, str_arg, FfiResult};
use crate::status::zoo_status;

/// An open session store. Free it with `zoo_session_store_free`. Safe to
/// use from several threads; agents open the file on their own.
pub struct zoo_session_store {
    store: SessionStore,
}

/// Opens (or creates) the session store at `path`; `*out_store` receives
/// a handle to free with `zoo_session_store_free`.
///
/// @param path The store's file (SQLite).
/// @param out_store On success, the store; free it with `zoo_session_store_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_IO` with the path and the reason when the file cannot be opened or is
/// not a session store, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not
/// UTF-8.
#[no_mangle]
pub extern "C" fn zoo_session_store_open(
    path: *const c_char,
    out_store: *mut *mut zoo_session_store,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_store, "out_store")?;
        let store = SessionStore::open(str_arg(path, "path")?)?;
        out.write(Box::into_raw(Box::new(zoo_session_store { store })));
        Ok(())
    })
}

/// Closes a session store. NULL is ignored.
///
/// @param store The store to close, or NULL.
#[no_mangle]
pub extern "C" fn zoo_session_store_free(store: *mut zoo_session_store) {
    guard_void(|| {
        if !store.is_null() {
            // SAFETY: a handle from `zoo_session_store_open`, freed at most once.
            drop(unsafe { Box::from_raw(store) });
        }
    });
}

/// Runs `body` on the store and writes the string it makes to `out`.
fn string_out(
    store: *const zoo_session_store,
    out: *mut *mut c_char,
    out_error: *mut *mut c_char,
    body: impl FnOnce(&SessionStore) -> FfiResult<String>,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out, "out")?;
        let text = body(&handle_arg(store, "store")?.store)?;
        out.write(into_c_string(text));
        Ok(())
    })
}

/// Every session as a JSON array, the most recently updated first: `id`,
/// `title`, `created_at`, `updated_at` (RFC 3339), `model`, `metadata`,
/// `message_count`. `*out_json` is freed with `zoo_string_free`.
///
/// @param store The session store.
/// @param out_json On success, the sessions; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_IO` when the store cannot be read, or `ZOO_INVALID_ARGUMENT` for a
/// NULL argument.
#[no_mangle]
pub extern "C" fn zoo_session_store_list_json(
    store: *const zoo_session_store,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    string_out(store, out_json, out_error, |store| {
        Ok(serde_json::to_string(&store.sessions()?)?)
    })
}

/// One session as JSON: the fields of the list plus `system_prompt` and
/// `messages` (as `zoo_agent_history_json` writes them).
///
/// @param store The session store.
/// @param id The session's id.
/// @param out_json On success, the session; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_IO` when the store cannot be read, or `ZOO_INVALID_ARGUMENT` when
/// there is no such session, for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_session_store_load_json(
    store: *const zoo_session_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    string_out(store, out_json, out_error, |store| {
        Ok(serde_json::to_string(&store.load(str_arg(id, "id")?)?)?)
    })
}

/// One session as pretty JSON, for backups (what
/// `zoo_session_store_import_json` reads).
///
/// @param store The session store.
/// @param id The session's id.
/// @param out_json On success, the export; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_IO` when the store cannot be read, or `ZOO_INVALID_ARGUMENT` when
/// there is no such session, for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_session_store_export_json(
    store: *const zoo_session_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    string_out(store, out_json, out_error, |store| {
        store.export_json(str_arg(id, "id")?)
    })
}

/// One session as JSON Lines: a message per line, system prompt first.
///
/// @param store The session store.
/// @param id The session's id.
/// @param out_jsonl On success, the transcript; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_IO` when the store cannot be read, or `ZOO_INVALID_ARGUMENT` when
/// there is no such session, for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_session_store_transcript_jsonl(
    store: *const zoo_session_store,
    id: *const c_char,
    out_jsonl: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    string_out(store, out_jsonl, out_error, |store| {
        store.transcript_jsonl(str_arg(id, "id")?)
    })
}

/// Reads an exported session into the store.
///
/// @param store The session store.
/// @param json A session export (`zoo_session_store_export_json`).
/// @param out_id On success, the session's id; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON` for text that is not a session export,
/// `ZOO_INVALID_ARGUMENT` when the store already has that id, for a NULL argument or text that
/// is not UTF-8, or `ZOO_IO` when the store cannot be written.
#[no_mangle]
pub extern "C" fn zoo_session_store_import_json(
    store: *const zoo_session_store,
    json: *const c_char,
    out_id: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    string_out(store, out_id, out_error, |store| {
        store.import_json(str_arg(json, "json")?)
    })
}

/// Deletes a session and its messages; `*out_deleted` is false when there
/// was none.
///
/// @param store The session store.
/// @param id The session's id.
/// @param out_deleted Whether there was such a session.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_IO` when the store cannot be written, or `ZOO_INVALID_ARGUMENT` for a
/// NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_session_store_delete(
    store: *const zoo_session_store,
    id: *const c_char,
    out_deleted: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_deleted, "out_deleted")?;
        let store = &handle_arg(store, "store")?.store;
        out.write(store.delete(str_arg(id, "id")?)?);
        Ok(())
    })
}

/// Sets a session's title.
///
/// @param store The session store.
/// @param id The session's id.
/// @param title The new title (UTF-8).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_IO` when the store cannot be read, or `ZOO_INVALID_ARGUMENT` when
/// there is no such session, for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_session_store_rename(
    store: *const zoo_session_store,
    id: *const c_char,
    title: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let store = &handle_arg(store, "store")?.store;
        store.rename(str_arg(id, "id")?, str_arg(title, "title")?)
    })
}

/// Sets a session's metadata to a JSON value of the caller's own.
///
/// @param store The session store.
/// @param id The session's id.
/// @param metadata_json The metadata, any JSON value.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON` for text that is not JSON, `ZOO_IO`, or
/// `ZOO_INVALID_ARGUMENT` when there is no such session, for a NULL argument or text that is
/// not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_session_store_set_metadata_json(
    store: *const zoo_session_store,
    id: *const c_char,
    metadata_json: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let store = &handle_arg(store, "store")?.store;
        let metadata = serde_json::from_str(str_arg(metadata_json, "metadata_json")?)
            .map_err(|e| zoo_core::Error::InvalidJson(format!("metadata_json: {e}")))?;
        store.set_metadata(str_arg(id, "id")?, &metadata)
    })
}

/// The id of the session the agent's conversation is kept in; `*out_id`
/// is NULL when the agent has no `session_store`, else freed with
/// `zoo_string_free`.
///
/// @param agent The agent.
/// @param out_id On success, the session's id, or NULL without a `session_store`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_agent_session_id(
    agent: *const zoo_agent,
    out_id: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_id, "out_id")?;
        let id = handle_arg(agent, "agent")?.agent.session_id();
        out.write(id.map_or(std::ptr::null_mut(), into_c_string));
        Ok(())
    })
}
