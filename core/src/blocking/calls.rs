//! `blocking_calls!`: the blocking facade's methods written from the async API's signatures,
//! as redis-rs's `implement_commands!` writes its sync and async command traits from one list.
//!
//! Each `fn name(args) -> Out;` becomes `pub fn name(&self, args) -> Result<Out>` that runs
//! `self.inner.name(args)` (the async handle's method of the same name) to completion with
//! `self.run` (the manager's runtime, its calls riding the caller's lane); an `Out` of `Lock`
//! or `Option<Lock>` comes back as the blocking [`Lock`](super::Lock) through `self.wrap`.
//! Generic parameters go in brackets after the name: `fn acquire_many[N: AsRef<[u8]>](..)`.
//! The docs link to the async method, whose errors are the call's.

macro_rules! blocking_calls {
    ($on:ident;) => {};
    ($on:ident; fn $name:ident $([$($g:tt)*])? ($($arg:ident: $aty:ty),* $(,)?) -> $($rest:tt)*) => {
        blocking_calls!(@out $on; $name [$($($g)*)?] ($($arg: $aty),*) $($rest)*);
    };
    (@out $on:ident; $name:ident [$($g:tt)*] ($($arg:ident: $aty:ty),*) Lock; $($rest:tt)*) => {
        blocking_calls!(@doc $on $name
            pub fn $name<$($g)*>(&self, $($arg: $aty),*) -> Result<Lock> {
                let lock = self.run(self.inner.$name($($arg),*))??;
                Ok(self.wrap(lock))
            }
        );
        blocking_calls!($on; $($rest)*);
    };
    (@out $on:ident; $name:ident [$($g:tt)*] ($($arg:ident: $aty:ty),*) Option<Lock>; $($rest:tt)*) => {
        blocking_calls!(@doc $on $name
            pub fn $name<$($g)*>(&self, $($arg: $aty),*) -> Result<Option<Lock>> {
                let lock = self.run(self.inner.$name($($arg),*))??;
                Ok(lock.map(|l| self.wrap(l)))
            }
        );
        blocking_calls!($on; $($rest)*);
    };
    (@out $on:ident; $name:ident [$($g:tt)*] ($($arg:ident: $aty:ty),*) $out:ty; $($rest:tt)*) => {
        blocking_calls!(@doc $on $name
            pub fn $name<$($g)*>(&self, $($arg: $aty),*) -> Result<$out> {
                self.run(self.inner.$name($($arg),*))?
            }
        );
        blocking_calls!($on; $($rest)*);
    };
    (@doc $on:ident $name:ident $item:item) => {
        #[doc = concat!("See [`crate::", stringify!($on), "::", stringify!($name), "`].")]
        #[doc = ""]
        #[doc = "# Errors"]
        #[doc = concat!("As [`crate::", stringify!($on), "::", stringify!($name), "`].")]
        $item
    };
}
