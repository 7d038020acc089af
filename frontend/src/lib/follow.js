// Follows one submission to its end: server-sent events for live progress, with polling as the
// fallback when the event stream fails and as a slow safety net if an event is missed.
import { api } from "./api.js";

const EVENT_NAMES = ["message", "status", "state", "phase", "queue", "queued", "running", "grading", "done", "result", "final", "finished"];
const SAFETY_POLL_MS = 4000;
const FALLBACK_POLL_MS = 1000;
const RESULT_GRACE_MS = 1500;

function isFinal(data, type) {
  return (data && data.status === "done") || type === "done" || type === "result" || type === "final" || type === "finished";
}

function isFullRecord(data) {
  return data && data.status === "done" && Array.isArray(data.requirements) && Array.isArray(data.tests);
}

/**
 * Resolves with the finished submission (the GET /api/submissions/{id} record).
 * onState({status, phase, queue}) is called on every change seen (queue: while queued, its place).
 */
export function followSubmission(id, onState) {
  const url = `/api/submissions/${encodeURIComponent(id)}`;
  return new Promise((resolve, reject) => {
    let finished = false;
    let source = null;
    let timer = null;

    const stop = () => {
      finished = true;
      if (source) source.close();
      clearTimeout(timer);
    };

    const finish = async (data) => {
      if (finished) return;
      stop();
      try {
        // An event may carry only part of the record; the GET is the source of truth.
        resolve(isFullRecord(data) ? data : (await api(url)).data);
      } catch (err) {
        reject(err);
      }
    };

    const poll = async (delay) => {
      if (finished) return;
      try {
        const { data } = await api(url);
        if (finished) return;
        if (data.status === "done") return finish(data);
        onState({ status: data.status, phase: null, queue: data.queue || null });
      } catch (err) {
        if (err.status === 404) {
          stop();
          return reject(err);
        }
      }
      if (!finished) timer = setTimeout(() => poll(source ? SAFETY_POLL_MS : FALLBACK_POLL_MS), delay);
    };

    const onEvent = (event) => {
      if (finished) return;
      let data = null;
      try {
        data = event.data ? JSON.parse(event.data) : null;
      } catch {
        data = null;
      }
      // Where a queued submission stands: {ahead, estimate_seconds}.
      if (event.type === "queue") return onState({ status: "queued", phase: null, queue: data });
      const status = (data && (data.status || data.state)) || (event.type !== "message" ? event.type : null);
      const phase = data && (data.phase || data.stage || null);
      if (isFullRecord(data) || (isFinal(data, event.type) && event.type !== "status")) return finish(data);
      if (isFinal(data, event.type)) {
        // "status: done" comes just before the "result" event that carries the whole record;
        // wait for it briefly rather than fetching the record a second time.
        clearTimeout(timer);
        timer = setTimeout(() => finish(null), RESULT_GRACE_MS);
      }
      onState({ status, phase });
    };

    if (typeof EventSource === "function") {
      source = new EventSource(`${url}/events`);
      for (const name of EVENT_NAMES) source.addEventListener(name, onEvent);
      source.onerror = () => {
        if (finished) return;
        // The stream closed before the final result: keep going by polling.
        source.close();
        source = null;
        clearTimeout(timer);
        poll(FALLBACK_POLL_MS);
      };
      timer = setTimeout(() => poll(SAFETY_POLL_MS), SAFETY_POLL_MS);
    } else {
      poll(FALLBACK_POLL_MS);
    }
  });
}
