'use strict';
// An EC2 API error: the code and message go into <Response><Errors><Error>, `status` is the HTTP status
// (400 for client errors, as EC2 answers them; 403 UnauthorizedOperation; 412 DryRunOperation).
class Ec2Error extends Error {
  constructor(code, message, status = 400) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

const missing = (name) => new Ec2Error('MissingParameter', `The request must contain the parameter ${name}`);
const invalid = (name, value, why = '') =>
  new Ec2Error('InvalidParameterValue', `Value (${value}) for parameter ${name} is invalid.${why ? ' ' + why : ''}`);

module.exports = { Ec2Error, missing, invalid };
