//! `NativeSessionStore`: the SQLite file conversations are kept in, to
//! list, load, rename, delete, export and import sessions from Node. Every
//! call runs on a libuv worker thread; shapes cross as the core's JSON and
//! `node/lib` turns them camelCase.

use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, ToNapiValue, TypeName};
use napi::{Env, Task};
use napi_derive::napi;
use zoo_core::{Error, SessionStore};

use crate::errors::{to_napi, IntoNapi};

/// An open session store (wrapped by the package's `SessionStore`).
#[napi]
pub struct NativeSessionStore {
    store: Arc<SessionStore>,
}

type StoreWork<T> = Box<dyn FnOnce(&SessionStore) -> zoo_core::Result<T> + Send>;

/// One call on the store, off the JavaScript thread.
pub struct StoreJob<T> {
    store: Arc<SessionStore>,
    run: Option<StoreWork<T>>,
}

impl<T: ToNapiValue + TypeName + Send + 'static> Task for StoreJob<T> {
    type Output = T;
    type JsValue = T;

    fn compute(&mut self) -> napi::Result<T> {
        match self.run.take() {
            Some(run) => run(&self.store).napi_err(),
            None => Err(to_napi(Error::Internal("a store job ran twice".into()))),
        }
    }

    fn resolve(&mut self, _env: Env, output: T) -> napi::Result<T> {
        Ok(output)
    }
}

/// Opens (or creates) the store at `path`, off the JavaScript thread.
pub struct OpenStore {
    path: String,
}

impl Task for OpenStore {
    type Output = SessionStore;
    type JsValue = NativeSessionStore;

    fn compute(&mut self) -> napi::Result<SessionStore> {
        SessionStore::open(&self.path).napi_err()
    }

    fn resolve(&mut self, _env: Env, store: SessionStore) -> napi::Result<NativeSessionStore> {
        Ok(NativeSessionStore {
            store: Arc::new(store),
        })
    }
}

/// Opens (or creates) the session store at `path`.
#[napi(ts_return_type = "Promise<NativeSessionStore>")]
pub fn open_session_store(path: String) -> AsyncTask<OpenStore> {
    AsyncTask::new(OpenStore { path })
}

#[napi]
impl NativeSessionStore {
    fn job<T>(
        &self,
        run: impl FnOnce(&SessionStore) -> zoo_core::Result<T> + Send + 'static,
    ) -> AsyncTask<StoreJob<T>>
    where
        StoreJob<T>: Task,
    {
        AsyncTask::new(StoreJob {
            store: self.store.clone(),
            run: Some(Box::new(run)),
        })
    }

    /// The file the store lives in.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.store.path().display().to_string()
    }

    /// Every session as a JSON array, the most recently updated first.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn sessions_json(&self) -> AsyncTask<StoreJob<String>> {
        self.job(|store| Ok(serde_json::to_string(&store.sessions()?)?))
    }

    /// One session (with its messages) as JSON.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn load_json(&self, id: String) -> AsyncTask<StoreJob<String>> {
        self.job(move |store| Ok(serde_json::to_string(&store.load(&id)?)?))
    }

    /// Deletes a session; false when there was none.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn delete(&self, id: String) -> AsyncTask<StoreJob<bool>> {
        self.job(move |store| store.delete(&id))
    }

    /// Sets a session's title.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn rename(&self, id: String, title: String) -> AsyncTask<StoreJob<()>> {
        self.job(move |store| store.rename(&id, &title))
    }

    /// Sets a session's metadata (JSON text).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn set_metadata_json(&self, id: String, json: String) -> AsyncTask<StoreJob<()>> {
        self.job(move |store| {
            let metadata = serde_json::from_str(&json)
                .map_err(|e| Error::InvalidJson(format!("metadata: {e}")))?;
            store.set_metadata(&id, &metadata)
        })
    }

    /// One session as pretty JSON, for backups.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn export_json(&self, id: String) -> AsyncTask<StoreJob<String>> {
        self.job(move |store| store.export_json(&id))
    }

    /// Reads an exported session into the store; resolves to its id.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn import_json(&self, json: String) -> AsyncTask<StoreJob<String>> {
        self.job(move |store| store.import_json(&json))
    }

    /// One session as JSON Lines, system prompt first.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn transcript_jsonl(&self, id: String) -> AsyncTask<StoreJob<String>> {
        self.job(move |store| store.transcript_jsonl(&id))
    }
}
