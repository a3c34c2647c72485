/** Where a secret comes from: a literal (after `${ENV}` substitution) or a stored secret name. */
export type SecretSource = { kind: "inline"; value: string } | { kind: "stored"; name: string };
