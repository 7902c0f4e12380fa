'use strict';
// AWS error answers in each service's own dialect: which code, HTTP status and body a real
// service sends for an authentication failure or an injected fault. Sources: the services' API
// references and common-error pages, and the AWS SDK for JavaScript v3 models (SQS's
// awsQueryError traits). Clients must classify by code, never by status alone.
const crypto = require('node:crypto');

const CORAL = 'com.amazon.coral.service#';
const DDB = 'com.amazonaws.dynamodb.v20120810#';
const SQS = 'com.amazonaws.sqs#';

const MSG = {
  missing: 'Request is missing Authentication Token',
  malformed: 'Authorization header is not a well-formed AWS4-HMAC-SHA256 header',
  unknownKey: 'The security token included in the request is invalid.',
  badToken: 'The security token included in the request is invalid.',
  expiredToken: 'The security token included in the request is expired',
  skew: 'Signature expired: the request time is more than 15 minutes from the server time.',
  mismatch: 'The request signature we calculated does not match the signature you provided. ' +
    'Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
};

// reason -> { code, status, ns (JSON __type namespace), queryCode (SQS's x-amzn-query-error / XML code) }
const AUTH = {
  dynamodb: {
    missing: { code: 'MissingAuthenticationTokenException', status: 400 },
    malformed: { code: 'IncompleteSignatureException', status: 400 },
    unknownKey: { code: 'UnrecognizedClientException', status: 400 },
    badToken: { code: 'UnrecognizedClientException', status: 400 },
    expiredToken: { code: 'ExpiredTokenException', status: 400 },
    skew: { code: 'InvalidSignatureException', status: 400 },
    mismatch: { code: 'InvalidSignatureException', status: 400 },
  },
  // SQS's JSON protocol is query-compatible: __type carries the JSON name, the
  // x-amzn-query-error header the legacy query code (which the SDKs surface as the error name).
  sqs: {
    missing: { code: 'MissingAuthenticationTokenException', queryCode: 'MissingAuthenticationToken', status: 403 },
    malformed: { code: 'IncompleteSignatureException', queryCode: 'IncompleteSignature', status: 400 },
    unknownKey: { code: 'UnrecognizedClientException', queryCode: 'InvalidClientTokenId', status: 403 },
    badToken: { code: 'UnrecognizedClientException', queryCode: 'InvalidClientTokenId', status: 403 },
    expiredToken: { code: 'ExpiredTokenException', queryCode: 'ExpiredToken', status: 403 },
    skew: { code: 'InvalidSignatureException', queryCode: 'SignatureDoesNotMatch', status: 403 },
    mismatch: { code: 'InvalidSignatureException', queryCode: 'SignatureDoesNotMatch', status: 403 },
  },
  // CloudWatch Logs (JSON 1.1): the common errors of the AWS JSON services.
  logs: {
    missing: { code: 'MissingAuthenticationTokenException', status: 400 },
    malformed: { code: 'IncompleteSignatureException', status: 400 },
    unknownKey: { code: 'UnrecognizedClientException', status: 400 },
    badToken: { code: 'UnrecognizedClientException', status: 400 },
    expiredToken: { code: 'ExpiredTokenException', status: 400 },
    skew: { code: 'InvalidSignatureException', status: 400 },
    mismatch: { code: 'InvalidSignatureException', status: 400 },
  },
  // STS (query protocol, sts/index.js): the codes of its XML errors.
  sts: {
    missing: { code: 'MissingAuthenticationToken', status: 403 },
    malformed: { code: 'IncompleteSignature', status: 400 },
    unknownKey: { code: 'InvalidClientTokenId', status: 403 },
    badToken: { code: 'InvalidClientTokenId', status: 403 },
    expiredToken: { code: 'ExpiredToken', status: 400 },
    skew: { code: 'SignatureDoesNotMatch', status: 403 },
    mismatch: { code: 'SignatureDoesNotMatch', status: 403 },
  },
  ec2: {
    missing: { code: 'MissingAuthenticationToken', status: 401 },
    malformed: { code: 'IncompleteSignature', status: 400 },
    unknownKey: { code: 'AuthFailure', status: 401, message: 'AWS was not able to validate the provided access credentials' },
    badToken: { code: 'AuthFailure', status: 401, message: 'AWS was not able to validate the provided access credentials' },
    expiredToken: { code: 'RequestExpired', status: 400, message: 'Request has expired.' },
    skew: { code: 'RequestExpired', status: 400 },
    mismatch: { code: 'SignatureDoesNotMatch', status: 403 },
  },
};
for (const table of Object.values(AUTH)) for (const e of Object.values(table)) e.ns ||= CORAL;

// DynamoDB's data-plane calls throttle with ProvisionedThroughputExceeded; the rest with Throttling.
const DDB_DATA_OPS = new Set(['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query', 'Scan',
  'BatchGetItem', 'BatchWriteItem', 'TransactGetItems', 'TransactWriteItems']);

const FAULTS = {
  dynamodb: {
    throttle: (op) => (DDB_DATA_OPS.has(op)
      ? { ns: DDB, code: 'ProvisionedThroughputExceededException', status: 400,
        message: 'The level of configured provisioned throughput for the table was exceeded.' }
      : { ns: DDB, code: 'ThrottlingException', status: 400, message: 'Rate of requests exceeds the allowed throughput.' }),
    error: () => ({ ns: DDB, code: 'InternalServerError', status: 500, message: 'Internal server error' }),
    retryAfter: () => ({ ns: DDB, code: 'ServiceUnavailable', status: 503, message: 'Service unavailable' }),
  },
  sqs: {
    // The SQS model gives RequestThrottled HTTP 403 (awsQueryError ["RequestThrottled", 403]).
    throttle: () => ({ ns: SQS, code: 'RequestThrottled', queryCode: 'RequestThrottled', status: 403, message: 'Rate exceeded' }),
    error: () => ({ ns: CORAL, code: 'InternalFailure', queryCode: 'InternalFailure', status: 500,
      message: 'The request processing has failed because of an unknown error, exception or failure.' }),
    retryAfter: () => ({ ns: CORAL, code: 'ServiceUnavailable', queryCode: 'ServiceUnavailable', status: 503,
      message: 'The request has failed due to a temporary failure of the server.' }),
  },
  logs: {
    throttle: () => ({ ns: CORAL, code: 'ThrottlingException', status: 400, message: 'Rate exceeded' }),
    error: () => ({ ns: CORAL, code: 'ServiceUnavailableException', status: 500,
      message: 'The service cannot complete the request.' }),
    retryAfter: () => ({ ns: CORAL, code: 'ServiceUnavailableException', status: 503,
      message: 'The service cannot complete the request.' }),
  },
  ec2: {
    throttle: () => ({ code: 'RequestLimitExceeded', status: 503, message: 'Request limit exceeded.' }),
    error: () => ({ code: 'InternalError', status: 500, message: 'An internal error has occurred.' }),
    retryAfter: () => ({ code: 'Unavailable', status: 503, message: "The server is overloaded and can't handle the request." }),
  },
};

// The error for a failed signature check: { reason, code, status, message, ns, queryCode }.
function authError(service, reason, message) {
  const e = AUTH[service][reason];
  return { ...e, reason, message: message || e.message || MSG[reason] };
}

// The error for a fault decision from faults.decide(): adds retryAfter (seconds) when asked.
function faultError(service, decision, operation) {
  const e = FAULTS[service][decision.kind](operation);
  return decision.kind === 'retryAfter' ? { ...e, retryAfter: decision.seconds } : e;
}

const xmlEscape = (s) => String(s).replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

// Renders an error as { status, headers, body } in the dialect of `service` and `protocol`
// ('json' for X-Amz-Target requests, 'query' for form/query requests).
function renderError(service, protocol, err) {
  const requestId = crypto.randomUUID();
  const headers = { 'x-amzn-requestid': requestId };
  if (err.retryAfter) headers['retry-after'] = String(err.retryAfter);
  const sender = err.status < 500 ? 'Sender' : 'Receiver';
  let body;
  if (service === 'ec2') {
    headers['content-type'] = 'text/xml;charset=UTF-8';
    body = '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>' +
      `<Code>${xmlEscape(err.code)}</Code><Message>${xmlEscape(err.message)}</Message>` +
      `</Error></Errors><RequestID>${requestId}</RequestID></Response>`;
  } else if (protocol === 'query') { // SQS's query protocol
    headers['content-type'] = 'text/xml';
    body = '<?xml version="1.0"?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">' +
      `<Error><Type>${sender}</Type><Code>${xmlEscape(err.queryCode || err.code)}</Code>` +
      `<Message>${xmlEscape(err.message)}</Message><Detail/></Error><RequestId>${requestId}</RequestId></ErrorResponse>`;
  } else {
    headers['content-type'] = service === 'logs' ? 'application/x-amz-json-1.1' : 'application/x-amz-json-1.0';
    if (err.queryCode) headers['x-amzn-query-error'] = `${err.queryCode};${sender}`;
    body = JSON.stringify({ __type: `${err.ns}${err.code}`, message: err.message });
  }
  return { status: err.status, headers, body };
}

module.exports = { authError, faultError, renderError, AUTH, FAULTS };
