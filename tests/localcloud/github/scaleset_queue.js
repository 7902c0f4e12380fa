'use strict';
// A runner scale set's message queue and its message session (the Actions service's
// `…/runnerscalesets/{id}/sessions` and the broker's `scalesets/message` long poll).
//
// The queue belongs to the set, not to a session: job messages wait in it whatever session is
// open, so a listener that restarts (new session, lastMessageId 0) gets every unacknowledged
// message again, as the real service redelivers. Messages are batched into envelopes at poll
// time (at most 50 job messages each); an envelope keeps its id and content until acknowledged.
//
// One session per set. It is live while a poll is open or any of its calls came within
// `scaleSetSessionIdleMs`; a second create meanwhile is a conflict. A lapsed session is not
// ended by the stand-in: it goes on working until a new create replaces it (how long the real
// service keeps an orphaned session is unknown; this is the stand-in's choice).
const crypto = require('node:crypto');
const { serviceToken } = require('./jwt');

const MAX_JOB_MESSAGES = 50;   // per envelope, as the real service batches
const FIRST_MESSAGE_ID = 100000001; // ids are large on GitHub and restart when a set is recreated
const KEEP_ACKED = 1000;       // acknowledged ids kept for the control reads

class MessageQueue {
  constructor() {
    this.nextId = FIRST_MESSAGE_ID;
    this.pending = [];  // job messages not yet in an envelope
    this.unacked = [];  // envelopes delivered at least once: { messageId, jobs, deliveries }
    this.acked = [];    // acknowledged envelope ids, newest last
    this.waiters = new Set();
  }

  push(jobMessage) {
    this.pending.push(jobMessage);
    for (const w of [...this.waiters]) w();
  }

  // The next envelope for a client that has processed up to `lastMessageId`, or null.
  next(lastMessageId) {
    let e = this.unacked.find((x) => x.messageId > lastMessageId);
    if (!e && this.pending.length) {
      e = { messageId: this.nextId++, jobs: this.pending.splice(0, MAX_JOB_MESSAGES), deliveries: 0 };
      this.unacked.push(e);
    }
    if (e) e.deliveries++;
    return e || null;
  }

  ack(messageId) {
    const i = this.unacked.findIndex((x) => x.messageId === messageId);
    if (i < 0) return;
    this.unacked.splice(i, 1);
    this.acked.push(messageId);
    if (this.acked.length > KEEP_ACKED) this.acked.shift();
  }

  // Wakes `fn` on the next push; -> a function that cancels the wait.
  wait(fn) {
    const w = () => { this.waiters.delete(w); fn(); };
    this.waiters.add(w);
    return () => this.waiters.delete(w);
  }
}

class Sessions {
  constructor(model) {
    this.model = model;
    this.tokens = new Map(); // queue token -> { setId, sessionId, expiresAt }
  }

  get s() { return this.model.settings; }

  live(session) {
    if (!session) return false;
    if (session.phantomUntil) return Date.now() < session.phantomUntil;
    return session.polls > 0 || Date.now() - session.lastSeen < this.s.scaleSetSessionIdleMs;
  }

  // -> the new session, or null when another is live (a conflict).
  create(set, ownerName, queueUrl) {
    if (this.live(set.session)) return null;
    this.end(set);
    const session = { id: crypto.randomUUID(), ownerName: String(ownerName || ''), createdAt: Date.now(), lastSeen: Date.now(), polls: 0, token: null, queueUrl };
    set.session = session;
    this.issueToken(set, session);
    return session;
  }

  // A session nobody uses, live for `ms` (an orphan left by a listener that died): creates
  // conflict until it lapses. Only where no session is live.
  phantom(set, ms) {
    if (this.live(set.session)) return false;
    this.end(set);
    set.session = { id: crypto.randomUUID(), ownerName: 'orphaned-listener', createdAt: Date.now(), lastSeen: Date.now(), polls: 0, token: null, phantomUntil: Date.now() + ms };
    return true;
  }

  // A new queue token replaces the old one (which then answers 401).
  issueToken(set, session) {
    if (session.token) this.tokens.delete(session.token);
    const expiresAt = Date.now() + this.s.queueTokenTtlMs;
    session.token = serviceToken({ sub: `scaleset:${set.id}`, sid: session.id, scp: 'MessageQueue' }, expiresAt);
    this.tokens.set(session.token, { setId: set.id, sessionId: session.id, expiresAt });
    session.lastSeen = Date.now();
  }

  // Ends the set's session (deleted, replaced, or the set is gone); its open polls get `status`.
  end(set, status = 401) {
    const session = set.session;
    if (!session) return;
    set.session = null; // its token stays known: a call with it tells a gone set (404) from a gone session (401)
    for (const finish of [...(session.open || [])]) finish(status);
  }

  // The token's unexpired entry -> { setId, sessionId }, or null (unknown, expired, refreshed).
  byToken(token) {
    const t = this.tokens.get(token);
    if (!t || t.expiresAt <= Date.now()) return null;
    return t;
  }

  expireToken(set) {
    const t = set.session && this.tokens.get(set.session.token);
    if (t) t.expiresAt = Date.now();
    return !!t;
  }

  touch(session) { session.lastSeen = Date.now(); }
}

module.exports = { MessageQueue, Sessions, MAX_JOB_MESSAGES, FIRST_MESSAGE_ID };
