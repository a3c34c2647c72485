/** JSON-RPC error code of a refused call; its message is exactly `Forbidden` (the contract's word). */
export const FORBIDDEN_CODE = -32001;
export const FORBIDDEN = "Forbidden";
